# termhost shell integration for bash.
#
# termhost starts an interactive bash as `bash --init-file <this file> -i`, so bash
# reads this file where it would have read ~/.bashrc. The file first reads the
# person's own startup files, then marks the prompt and every command with OSC 633
# sequences, each ended by BEL:
#
#   ESC]633;A BEL                 the prompt begins
#   ESC]633;B BEL                 the prompt ends: what follows is typed
#   ESC]633;E;<line>;<nonce> BEL  the command line about to run
#   ESC]633;C BEL                 the command starts running
#   ESC]633;D;<code> BEL          the command finished, with its exit status
#   ESC]633;P;Cwd=<dir> BEL       the current directory, at every prompt
#
# In <line> and <dir> a backslash is written \\, a ';' \x3b and any control
# character \xHH. Everything defined here is named __termhost_*.
#
# The prompt marks come from PS1, which gets A in front and B behind at every
# prompt, and from PROMPT_COMMAND, which writes D for the command that ran and P.
# The person's own PROMPT_COMMAND runs in between, with $? as the command left it.
# E and C come from PS0 (bash 4.4 and later), which bash prints once it has read a
# command line and before it runs it; an older bash gets them from a DEBUG trap.
# The line is read back from the history list.

if [ -z "${__termhost_loaded-}" ]; then
__termhost_loaded=1

# The nonce proves an E mark comes from this script. It lives on in a shell
# variable only: programs started from this shell never see it.
__termhost_nonce=${VSCODE_NONCE-}
builtin unset VSCODE_NONCE
__termhost_login=${TERMHOST_SHELL_LOGIN-}
# TERMHOST_BASH_PREEXEC=debug finds where commands start with a DEBUG trap even
# where PS0 would do (for tests: it is what a bash older than 4.4 gets).
__termhost_debug_trap=
if ((BASH_VERSINFO[0] < 4 || (BASH_VERSINFO[0] == 4 && BASH_VERSINFO[1] < 4))) ||
	[ "${TERMHOST_BASH_PREEXEC-}" = debug ]; then
	__termhost_debug_trap=1
fi
builtin unset TERMHOST_SHELL_LOGIN TERMHOST_BASH_PREEXEC

# The person's own startup files, read as bash would have read them. A login shell
# ignores --init-file, so termhost starts bash as an ordinary interactive shell and
# sets TERMHOST_SHELL_LOGIN=1 when it was asked for a login shell; the profile
# files are read here instead. (/etc/bash.bashrc, where bash is built to read one,
# has been read already: --init-file takes the place of ~/.bashrc only.)
if [ "$__termhost_login" = 1 ]; then
	if [ -f /etc/profile ]; then . /etc/profile; fi
	if [ -f ~/.bash_profile ]; then . ~/.bash_profile
	elif [ -f ~/.bash_login ]; then . ~/.bash_login
	elif [ -f ~/.profile ]; then . ~/.profile
	fi
elif [ -f ~/.bashrc ]; then
	. ~/.bashrc
fi
fi

# From here on the person's files have run. Aliases they defined must not change
# the functions below: alias expansion is off while they are read.
__termhost_aliases=
if builtin shopt -q expand_aliases; then
	__termhost_aliases=1
	builtin shopt -u expand_aliases
fi

if [ -z "${__termhost_installed-}" ]; then
__termhost_installed=1

# __termhost_escape VALUE: sets __termhost_escaped to VALUE as a mark carries it.
__termhost_escape() {
	local LC_ALL=C
	local s=$1 bs='\' semi=';' out='' c i
	s=${s//"$bs"/"$bs$bs"}
	s=${s//"$semi"/"${bs}x3b"}
	if [[ $s == *[[:cntrl:]]* ]]; then
		for ((i = 0; i < ${#s}; i++)); do
			c=${s:i:1}
			if [[ $c == [[:cntrl:]] ]]; then
				builtin printf -v c '\\x%02x' "'$c"
			fi
			out+=$c
		done
		s=$out
	fi
	__termhost_escaped=$s
}

# __termhost_restore STATUS [LASTARG]: a command whose status is STATUS and whose
# last argument, which is what $_ becomes, is LASTARG.
__termhost_restore() {
	builtin return "$1"
}

# VSCODE_PREVENT_SHELL_HISTORY=1 keeps this shell's commands out of the person's
# history: there is no history file to read or write, and each line leaves the
# in-memory list at the next prompt, before any prompt command of theirs runs, so
# that not even a `history -a FILE` can save it.
__termhost_private=
if [ "${VSCODE_PREVENT_SHELL_HISTORY-}" = 1 ]; then
	__termhost_private=1
	builtin unset HISTFILE
fi

# __termhost_read_line [SIMPLECOMMAND]: sets __termhost_line to the command line
# that is about to run, read back from the history list, or unsets it when the
# line did not enter the history and so cannot be known. A line stays out of the
# history under ignorespace, ignoredups, HISTIGNORE or set +o history; only
# ignoredups leaves the newest entry the same line, so the newest entry is taken
# when nothing else could have kept the line out, or when it is exactly
# SIMPLECOMMAND, the command about to run.
__termhost_hist_re='^[[:space:]]*([0-9]+)[* ] (.*)$'
__termhost_read_line() {
	builtin unset __termhost_line
	[[ -o history ]] || return 0
	local h
	h=$(HISTTIMEFORMAT='' builtin history 1) || return 0
	[[ $h =~ $__termhost_hist_re ]] || return 0
	if [[ ${BASH_REMATCH[1]} != "$__termhost_next_hist" ]]; then
		if [[ -n ${1-} ]]; then
			[[ ${BASH_REMATCH[2]} == "$1" ]] || return 0
		else
			[[ ${HISTCONTROL-} != *ignorespace* && ${HISTCONTROL-} != *ignoreboth* && -z ${HISTIGNORE-} ]] || return 0
		fi
	fi
	__termhost_line=${BASH_REMATCH[2]}
}

# __termhost_mark_line [SIMPLECOMMAND]: the E mark of the line about to run.
__termhost_mark_line() {
	__termhost_read_line "$@"
	if [[ -n ${__termhost_line+x} ]]; then
		__termhost_escape "$__termhost_line"
		builtin printf '\033]633;E;%s;%s\007' "$__termhost_escaped" "$__termhost_nonce"
	fi
}

__termhost_ran=
__termhost_armed=
__termhost_empty=
if [[ -z $__termhost_debug_trap ]]; then
	# bash 4.4 and later prints PS0 once a command line has been read, just before
	# it runs: E and C go there. Expanding PS0 also sets __termhost_ran, in this
	# shell (an arithmetic expansion in the offset of an empty substring), so that
	# the next prompt knows to write D.
	__termhost_ps0_ours='$(__termhost_mark_line)${__termhost_empty:__termhost_ran=1:0}\033]633;C\007'
	__termhost_ps0_user=${PS0-}
	__termhost_ps0_wrapped=$__termhost_ps0_user$__termhost_ps0_ours
	PS0=$__termhost_ps0_wrapped
else
	# Older bash: a DEBUG trap, which runs before every simple command. The first
	# one after a prompt, outside the prompt commands, is where the command line
	# starts. (A line that starts with a subshell is missed.)
	__termhost_preexec() {
		__termhost_dbg_status=$?
		__termhost_dbg_arg=$1
		[[ -n $__termhost_armed ]] || return 0
		[[ -z ${COMP_LINE+x} && -z ${READLINE_LINE+x} ]] || return 0
		((BASH_SUBSHELL == 0)) || return 0
		case $BASH_COMMAND in __termhost_precmd*) return 0 ;; esac
		__termhost_armed=
		__termhost_ran=1
		__termhost_mark_line "$BASH_COMMAND"
		builtin printf '\033]633;C\007'
		return 0
	}

	# A DEBUG trap the person's files set runs after ours, with $? and $_ as they
	# were.
	__termhost_trap=$(builtin trap -p DEBUG)
	if [[ -n $__termhost_trap ]]; then
		__termhost_trap=${__termhost_trap#"trap -- '"}
		__termhost_trap=${__termhost_trap%"' DEBUG"}
		__termhost_trap=${__termhost_trap//"'\\''"/"'"}
		builtin trap "__termhost_preexec \"\$_\"; __termhost_restore \"\$__termhost_dbg_status\" \"\$__termhost_dbg_arg\"
$__termhost_trap" DEBUG
	else
		builtin trap '__termhost_preexec "$_"; : "$__termhost_dbg_arg"' DEBUG
	fi
	builtin unset __termhost_trap
fi

# PROMPT_COMMAND becomes the person's prompt commands (a string, or in bash 5.1
# and later an array, made one string) between two of ours: __termhost_precmd
# first, to report how the command ended while $? still says it, and
# __termhost_precmd_last at the end, to mark the prompt the person's commands have
# just made. Anything added to PROMPT_COMMAND later is taken in the same way.
__termhost_pc_first='__termhost_precmd "$_"'
__termhost_pc_last='__termhost_precmd_last "$_"'
__termhost_adopt_pc() {
	local pc user=''
	for pc in "${PROMPT_COMMAND[@]}"; do
		pc=${pc//"$__termhost_pc_first"/:}
		pc=${pc//"$__termhost_pc_last"/:}
		[[ -n $pc ]] && user+=$pc$'\n'
	done
	builtin unset PROMPT_COMMAND
	__termhost_pc=$__termhost_pc_first$'\n'$user$__termhost_pc_last
	PROMPT_COMMAND=$__termhost_pc
}
__termhost_adopt_pc

__termhost_ps1_user=${PS1-}
__termhost_ps1_wrapped=
__termhost_next_hist=
__termhost_status=0

__termhost_precmd() {
	__termhost_status=$?
	__termhost_armed=
	if [[ -n $__termhost_ran ]]; then
		__termhost_ran=
		builtin printf '\033]633;D;%s\007' "$__termhost_status"
	fi
	if [[ -n $__termhost_private ]]; then
		while ((${HISTCMD:-0} > ${__termhost_next_hist:-0} && __termhost_next_hist > 0)); do
			builtin history -d "$__termhost_next_hist" 2>/dev/null || break
		done
	fi
	# The prompt as the person last set it, for their prompt commands to see.
	if [[ ${PS1-} != "$__termhost_ps1_wrapped" ]]; then
		__termhost_ps1_user=${PS1-}
	fi
	PS1=$__termhost_ps1_user
	__termhost_restore "$__termhost_status"
}

__termhost_precmd_last() {
	local st=$?
	if [[ ${#PROMPT_COMMAND[@]} != 1 || $PROMPT_COMMAND != "$__termhost_pc" ]]; then
		__termhost_adopt_pc
	fi
	__termhost_ps1_user=${PS1-}
	__termhost_ps1_wrapped='\[\033]633;A\007\]'$__termhost_ps1_user'\[\033]633;B\007\]'
	PS1=$__termhost_ps1_wrapped
	if [[ -z $__termhost_debug_trap ]]; then
		if [[ ${PS0-} != "$__termhost_ps0_wrapped" ]]; then
			__termhost_ps0_user=${PS0-}
		fi
		__termhost_ps0_wrapped=$__termhost_ps0_user$__termhost_ps0_ours
		PS0=$__termhost_ps0_wrapped
	fi
	__termhost_escape "$PWD"
	builtin printf '\033]633;P;Cwd=%s\007' "$__termhost_escaped"
	__termhost_next_hist=${HISTCMD-}
	__termhost_armed=1
	__termhost_restore "$st"
}
fi

if [ -n "$__termhost_aliases" ]; then
	builtin shopt -s expand_aliases
fi
builtin unset __termhost_aliases
