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
# termhost installs this file without its comment lines and blank lines (bash
# would read them at every start): a line inside a quoted string must not begin
# with '#', nor be empty.
#
# The prompt marks come from PS1, which gets A in front and B behind at every
# prompt, and from PROMPT_COMMAND, which writes D for the command that ran and P.
# The person's own PROMPT_COMMAND runs in between, with $? as the command left it.
# E and C come from a DEBUG trap, before the line's first command: in bash 4.4
# and later one that each prompt sets and that line takes away, with PS0 saying
# the line has been read; in an older bash one that stays. The line is read back
# from the history list. No fork is made for any of it (see the scratch file).

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

# The scratch file: what a builtin prints is written into it and read back with
# `read`, which costs no fork, where `$(...)` forks a bash for every use (about
# 2.5 ms, and far more on a loaded machine) and would do so for every command
# line. termhost hands it over as descriptor 3 (TERMHOST_BASH_SCRATCH=3): a file
# in memory with no name anywhere, so nothing is made in a temporary folder and
# nothing is left behind. It begins with "termhost-scratch <nonce>" and a NUL,
# which proves descriptor 3 is that file; only a regular file is read, as a read
# of a pipe or a terminal could wait. The shell moves it to a descriptor of its
# own before the person's files run (programs it starts inherit that one) and
# writes to it through /dev/fd (a new opening, at offset 0), truncating it first
# (>|, which noclobber does not refuse), and reads it back to its end. Without it (no such descriptor, no /dev/fd) the shell reads with
# `$(...)`, which forks.
# (`command exec`, never `builtin exec`: redirections on `builtin exec` are
# undone when it returns, all but a {var} descriptor's opening, so a descriptor it
# closes stays open. `command` passes over a function named exec all the same.)
__termhost_scratch=
if [ "${TERMHOST_BASH_SCRATCH-}" = 3 ] && [ -n "$__termhost_nonce" ]; then
	{ [[ -f /dev/fd/3 && -w /dev/fd/3 ]] &&
		IFS= builtin read -r -d '' __termhost_out </dev/fd/3 &&
		[[ $__termhost_out == "termhost-scratch $__termhost_nonce" ]] &&
		command exec {__termhost_scratch_fd}<>/dev/fd/3 3<&- &&
		__termhost_scratch=/dev/fd/$__termhost_scratch_fd; } 2>/dev/null
	__termhost_out=
fi
builtin unset TERMHOST_BASH_SCRATCH

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
# Printable ASCII, which nearly every command line and folder is, reads the same
# in every locale, and is escaped as it is; anything else byte by byte in the C
# locale (__termhost_escape_bytes). Setting LC_ALL costs an interactive bash two
# locale loads, about 0.1 ms, once on the way in and once on the way out.
__termhost_escape() {
	if [[ $1 == *[![:ascii:]]* || $1 == *[[:cntrl:]]* ]]; then
		__termhost_escape_bytes "$1"
		return
	fi
	local s=$1 bs='\' semi=';'
	s=${s//"$bs"/"$bs$bs"}
	__termhost_escaped=${s//"$semi"/"${bs}x3b"}
}

__termhost_escape_bytes() {
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
# `history 1` prints the entry's number right-aligned in five columns or more,
# a '*' or a space, a space and the line. It is taken apart by offsets, not with
# =~, which compiles its regular expression at every use (about 0.4 million
# instructions in a UTF-8 locale, more than the rest of a line's marks).
__termhost_read_line() {
	builtin unset __termhost_line
	[[ -o history ]] || return 0
	if [[ -n $__termhost_scratch ]]; then
		HISTTIMEFORMAT='' builtin history 1 >|"$__termhost_scratch" || return 0
		IFS= builtin read -r -d '' __termhost_out <"$__termhost_scratch" || :
	else
		__termhost_out=$(HISTTIMEFORMAT='' builtin history 1) || return 0
	fi
	local o=${__termhost_out%$'\n'} i=5 n
	while [[ $o == *$'\n' ]]; do o=${o%$'\n'}; done
	while [[ ${o:i:1} == [0-9] ]]; do ((i++)); done
	n=${o:0:i}
	n=${n##*[[:space:]]}
	[[ -n $n && $n != *[!0-9]* && ${o:i:2} == [\ *]\  ]] || return 0
	if [[ $n != "$__termhost_next_hist" ]]; then
		if [[ -n ${1-} ]]; then
			[[ ${o:i+2} == "$1" ]] || return 0
		else
			[[ ${HISTCONTROL-} != *ignorespace* && ${HISTCONTROL-} != *ignoreboth* && -z ${HISTIGNORE-} ]] || return 0
		fi
	fi
	__termhost_line=${o:i+2}
}

# __termhost_start_marks [SIMPLECOMMAND]: sets __termhost_marks to the E mark of
# the line about to run (when it is known) and the C mark.
__termhost_start_marks() {
	__termhost_read_line "$@"
	__termhost_marks=
	if [[ -n ${__termhost_line+x} ]]; then
		__termhost_escape "$__termhost_line"
		builtin printf -v __termhost_marks '\033]633;E;%s;%s\007' "$__termhost_escaped" "$__termhost_nonce"
	fi
	__termhost_marks+=$'\e]633;C\a'
}

# __termhost_user_trap_of TRAPLINE: sets __termhost_user_trap to the command of a
# `trap -p DEBUG` line, "" for none.
__termhost_user_trap_of() {
	local t=$1
	[[ $t == "trap -- '"* ]] || t=
	t=${t#"trap -- '"}
	t=${t%"' DEBUG"}
	__termhost_user_trap=${t//"'\\''"/"'"}
}

__termhost_ran=
__termhost_armed=
__termhost_empty=
__termhost_user_trap=
if [[ -z $__termhost_debug_trap ]]; then
	# bash 4.4 and later prints PS0 once a command line has been read, just before
	# it runs. Expanding PS0 sets __termhost_ran, in this shell and with no fork
	# (an arithmetic expansion in the offset of an empty substring): the line has
	# been read, its commands may start, and the next prompt is to write D.
	#
	# E and C come from a DEBUG trap that each prompt sets and the first command
	# of the line takes away again (what a DEBUG trap costs, it costs once a
	# line): it runs before that command, with the line already in the history.
	# A line can start with a subshell, which runs before any command of this
	# shell does; so from the prompt to the first command `set -T` (functrace)
	# hands the trap down to subshells, and whichever runs first - this shell, or
	# a subshell at its first command - takes the line's one token, a byte in a
	# pipe, and writes E and C; no other can (a pipe gives a byte to one reader).
	# A line with no command at all (a function's definition) is marked at the
	# next prompt, before its D. The person's own DEBUG trap runs after ours,
	# with $? and $_ as they were, and is theirs alone again from the first
	# command on; it does not run where only our functrace took the trap.
	__termhost_ps0_ours='${__termhost_empty:__termhost_ran=1:0}'
	__termhost_ps0_user=${PS0-}
	__termhost_ps0_wrapped=$__termhost_ps0_user$__termhost_ps0_ours
	PS0=$__termhost_ps0_wrapped

	__termhost_tok=
	__termhost_tracing=
	__termhost_user_functrace=

	# __termhost_claim: takes the line's token; false when it is gone.
	__termhost_claim() {
		[[ -n $__termhost_tok ]] || return 1
		local c st=0
		# A pipe whose only writer closed at once: the read never waits. The
		# timeout is there should anything ever hold it open unwritten.
		IFS= builtin read -r -N 1 -t 1 -u "$__termhost_tok" c 2>/dev/null || st=$?
		command exec {__termhost_tok}<&-
		__termhost_tok=
		return "$st"
	}

	__termhost_preexec() {
		__termhost_dbg_status=$?
		__termhost_dbg_arg=$1
		__termhost_next=
		__termhost_skip=
		if [[ -z $__termhost_user_functrace ]] && ((BASH_SUBSHELL > 0 || ${#FUNCNAME[@]} > 1)); then
			__termhost_skip=1
		fi
		[[ -n $__termhost_ran && -z ${COMP_LINE+x} && -z ${READLINE_LINE+x} ]] || return 0
		[[ ${FUNCNAME[1]-} != __termhost_* ]] || return 0
		case $BASH_COMMAND in __termhost_precmd*) return 0 ;; esac
		# The line's first command in this shell or this subshell: the trap goes
		# back to the person's, and functrace to what they had.
		if [[ -z $__termhost_user_functrace ]]; then
			builtin set +T
			__termhost_tracing=
		fi
		if [[ -n $__termhost_user_trap ]] && { ((BASH_SUBSHELL == 0)) || [[ -n $__termhost_user_functrace ]]; }; then
			__termhost_next=user
		else
			# Taken away here, not by the trap's own text after this returns:
			# functrace was on when this function was called, so bash does not
			# put the trap back when it returns.
			__termhost_next=none
			builtin trap - DEBUG
		fi
		__termhost_claim || return 0
		__termhost_start_marks
		if ((BASH_SUBSHELL == 0)); then
			builtin printf '%s' "$__termhost_marks" >&2
		else
			# A subshell's output may go into a pipe: the marks go to the terminal.
			{ builtin printf '%s' "$__termhost_marks" >/dev/tty; } 2>/dev/null ||
				builtin printf '%s' "$__termhost_marks" >&2
		fi
		return 0
	}

	# __termhost_arm LASTARG: the trap for the next line, the last of the prompt
	# commands. It chains the person's DEBUG trap as it stands then, which
	# __termhost_pc_last reads into the scratch file first: a function's body
	# does not see the trap (bash takes it away while a function runs).
	__termhost_arm() {
		if [[ -n $__termhost_scratch ]]; then
			# The file holds what `trap -p` printed, nothing when there is no
			# trap; it ends at the first "' DEBUG" and newline: a quote inside
			# the trap is written '\''. (read stops at the end of the file and
			# fails, which under set -e must not end the shell.)
			IFS= builtin read -r -d '' __termhost_trap_now <"$__termhost_scratch" || :
			__termhost_trap_now=${__termhost_trap_now%%"' DEBUG"$'\n'*}
		fi
		# Still ours (the line never got to a command of this shell): the
		# person's trap is the one it chains already.
		# Rebuilt only when the person's trap is not the one it chains already.
		if [[ ($__termhost_trap_now != *__termhost_preexec* && $__termhost_trap_now != "$__termhost_trap_chained") || -z $__termhost_armed_trap ]]; then
			__termhost_trap_chained=$__termhost_trap_now
			__termhost_user_trap_of "$__termhost_trap_now"
			if [[ -n $__termhost_user_trap ]]; then
				__termhost_armed_trap='__termhost_preexec "$_"
case $__termhost_next in user) builtin trap -- "$__termhost_user_trap" DEBUG ;; none) builtin trap - DEBUG ;; esac
if [[ -n $__termhost_skip ]]; then : "$__termhost_dbg_arg"; else __termhost_restore "$__termhost_dbg_status" "$__termhost_dbg_arg"
'$__termhost_user_trap'
fi'
			else
				# With no trap of the person's to chain, the trap is one line:
				# bash parses a trap's text every time it runs (some 600
				# instructions a byte). Before the line is read (__termhost_ran
				# empty: the prompt's own commands, completion) it does nothing,
				# and [[ leaves $_ as it was; after, the call's last argument
				# is $_ as it was, and preexec takes the trap away itself.
				__termhost_armed_trap='[[ -z $__termhost_ran ]] || __termhost_preexec "$_"'
			fi
		fi
		if [[ -n $__termhost_tok ]]; then
			command exec {__termhost_tok}<&-
		fi
		command exec {__termhost_tok}<<<''
		if [[ -o functrace ]]; then
			__termhost_user_functrace=1
		else
			__termhost_user_functrace=
			__termhost_tracing=1
			builtin set -T
		fi
		builtin trap -- "$__termhost_armed_trap" DEBUG
		# The trap runs before every command from here on (functrace is on):
		# one `return`, not a call of __termhost_restore and its return.
		builtin return "$__termhost_pc_status"
	}
	__termhost_armed_trap=
	__termhost_trap_now=
	__termhost_trap_chained=
fi

# PROMPT_COMMAND becomes the person's prompt commands (a string, or in bash 5.1
# and later an array, made one string) between two of ours: __termhost_precmd
# first, to report how the command ended while $? still says it, and
# __termhost_precmd_last at the end, to mark the prompt the person's commands have
# just made. Anything added to PROMPT_COMMAND later is taken in the same way.
__termhost_pc_first='__termhost_precmd "$_"'
__termhost_pc_last='__termhost_precmd_last "$_"'
if [[ -z $__termhost_debug_trap ]]; then
	# The DEBUG trap is read out here, outside any function, and the last
	# command's argument is $_ as the line left it.
	# (The person's trap runs before this command, and writes where it writes:
	# the redirection is made after it.)
	if [[ -n $__termhost_scratch ]]; then
		__termhost_pc_last+=$'\nbuiltin trap -p DEBUG >|"$__termhost_scratch"'
	else
		__termhost_pc_last+=$'\n__termhost_trap_now=$(builtin trap -p DEBUG)'
	fi
	__termhost_pc_last+=$'\n__termhost_arm "$__termhost_pc_arg"'
fi
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
__termhost_cwd=
__termhost_cwd_escaped=

__termhost_precmd() {
	__termhost_status=$?
	__termhost_armed=
	if [[ -n $__termhost_ran ]]; then
		__termhost_ran=
		if [[ -z $__termhost_debug_trap ]]; then
			# A line none of whose commands started (a function's definition)
			# still ran: its E and C come now.
			if [[ -n $__termhost_tok ]] && __termhost_claim; then
				__termhost_start_marks
				builtin printf '%s' "$__termhost_marks" >&2
			fi
		fi
		builtin printf '\033]633;D;%s\007' "$__termhost_status"
	fi
	if [[ -n ${__termhost_tracing-} ]]; then
		__termhost_tracing=
		builtin set +T
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
	builtin return "$__termhost_status"
}

__termhost_precmd_last() {
	local st=$?
	__termhost_pc_status=$st
	__termhost_pc_arg=$1
	if [[ ${!PROMPT_COMMAND[*]} != 0 || ${PROMPT_COMMAND-} != "$__termhost_pc" ]]; then
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
	# The folder is escaped again only when it changed (most prompts it did not).
	if [[ $PWD != "$__termhost_cwd" || -z $__termhost_cwd ]]; then
		__termhost_escape "$PWD"
		__termhost_cwd=$PWD __termhost_cwd_escaped=$__termhost_escaped
	fi
	builtin printf '\033]633;P;Cwd=%s\007' "$__termhost_cwd_escaped"
	__termhost_next_hist=${HISTCMD-}
	__termhost_armed=1
	builtin return "$st"
}
fi

# A bash of 4.4 or later is done here. What only an older one needs comes after
# this return, so that a newer one does not parse it (bash parses every line it
# reads, at some 600 instructions a byte: this file is a good part of a shell's
# start).
if [[ -z $__termhost_debug_trap || -n ${__termhost_old_installed-} ]]; then
	if [ -n "$__termhost_aliases" ]; then
		builtin shopt -s expand_aliases
	fi
	builtin unset __termhost_aliases
	builtin return 0
fi
__termhost_old_installed=1

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
	__termhost_start_marks "$BASH_COMMAND"
	builtin printf '%s' "$__termhost_marks"
	return 0
}

# A DEBUG trap the person's files set runs after ours, with $? and $_ as they
# were. (Read here, outside any function, where the trap is seen.)
if [[ -n $__termhost_scratch ]]; then
	builtin printf '\0' 1<>"$__termhost_scratch"
	builtin trap -p DEBUG 1<>"$__termhost_scratch"
	IFS= builtin read -r -d '' __termhost_trap_now <"$__termhost_scratch" || :
	__termhost_trap_now=${__termhost_trap_now%%"' DEBUG"$'\n'*}
else
	__termhost_trap_now=$(builtin trap -p DEBUG)
fi
__termhost_user_trap_of "$__termhost_trap_now"
if [[ -n $__termhost_user_trap ]]; then
	builtin trap "__termhost_preexec \"\$_\"; __termhost_restore \"\$__termhost_dbg_status\" \"\$__termhost_dbg_arg\"
$__termhost_user_trap" DEBUG
else
	builtin trap '__termhost_preexec "$_"; : "$__termhost_dbg_arg"' DEBUG
fi

if [ -n "$__termhost_aliases" ]; then
	builtin shopt -s expand_aliases
fi
builtin unset __termhost_aliases
