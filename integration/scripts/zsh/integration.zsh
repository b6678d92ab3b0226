# termhost shell integration for zsh.
#
# Loaded by the .zshrc of termhost's ZDOTDIR folder once the person's own .zshrc
# has run. It marks the prompt and every command with OSC 633 sequences, each
# ended by BEL:
#
#   ESC]633;A BEL                 the prompt begins
#   ESC]633;B BEL                 the prompt ends: what follows is typed
#   ESC]633;E;<line>;<nonce> BEL  the command line about to run
#   ESC]633;C BEL                 the command starts running
#   ESC]633;D;<code> BEL          the command finished, with its exit status
#   ESC]633;P;Cwd=<dir> BEL       the current directory, at every prompt
#
# In <line> and <dir> a backslash is written \\, a ';' \x3b and any control
# character \xHH. Everything defined here is named __termhost_*; the person's own
# precmd and preexec hooks stay where they are, with ours added around them.

if (( ! ${+__termhost_integration} )); then
typeset -g __termhost_integration=1

# Sourced by hand rather than through termhost's .zshenv: read the nonce here.
if (( ! ${+__termhost_nonce} )); then
	typeset -g __termhost_nonce=${VSCODE_NONCE-}
fi
builtin unset VSCODE_NONCE

typeset -gi __termhost_ran=0
typeset -g __termhost_ps1_user=${PS1-} __termhost_ps1_wrapped= __termhost_escaped=

# __termhost_escape VALUE: sets __termhost_escaped to VALUE as a mark carries it.
__termhost_escape() {
	builtin emulate -L zsh
	builtin setopt no_multibyte
	local s=$1 bs='\' out= c
	local -i i n
	s=${s//$bs/$bs$bs}
	s=${s//;/${bs}x3b}
	if [[ $s == *[[:cntrl:]]* ]]; then
		for (( i = 1; i <= $#s; i++ )); do
			c=$s[i]
			builtin printf -v n '%d' "'$c"
			if (( n < 32 || n == 127 )); then
				builtin printf -v c '\\x%02x' $n
			fi
			out+=$c
		done
		s=$out
	fi
	__termhost_escaped=$s
}

# VSCODE_PREVENT_SHELL_HISTORY=1 keeps this shell's commands out of the person's
# history: no history file, and no line is kept in the history list either, so
# nothing (fc -W, a SHARE_HISTORY write, a later HISTFILE) can save one.
__termhost_history_policy() {
	if [[ ${VSCODE_PREVENT_SHELL_HISTORY-} == 1 ]]; then
		builtin unset HISTFILE
		builtin setopt hist_ignore_space
	fi
}
__termhost_history_policy
__termhost_zshaddhistory() {
	[[ ${VSCODE_PREVENT_SHELL_HISTORY-} != 1 ]]
}

# First of the precmd hooks: how the command ended, while $? still says it.
__termhost_precmd() {
	local -i st=$?
	builtin emulate -L zsh
	if (( __termhost_ran )); then
		__termhost_ran=0
		builtin printf '\033]633;D;%s\007' $st
	fi
	# The prompt as the person last set it, for their hooks to see.
	if [[ $PS1 != $__termhost_ps1_wrapped ]]; then
		__termhost_ps1_user=$PS1
	fi
	PS1=$__termhost_ps1_user
}

# Last of the precmd hooks: mark the prompt the person's hooks have just made.
__termhost_precmd_last() {
	builtin emulate -L zsh
	__termhost_ps1_user=$PS1
	__termhost_ps1_wrapped=$'%{\e]633;A\a%}'$__termhost_ps1_user$'%{\e]633;B\a%}'
	PS1=$__termhost_ps1_wrapped
	__termhost_escape $PWD
	builtin printf '\033]633;P;Cwd=%s\007' $__termhost_escaped
	__termhost_order_hooks
}

# Last of the preexec hooks: the line, just before it runs. zsh hands preexec the
# line as typed even when the history does not keep it.
__termhost_preexec() {
	builtin emulate -L zsh
	__termhost_ran=1
	__termhost_escape "$1"
	builtin printf '\033]633;E;%s;%s\007\033]633;C\007' $__termhost_escaped $__termhost_nonce
}

# Ours first and last, whatever has been added since.
__termhost_order_hooks() {
	builtin emulate -L zsh
	precmd_functions=(__termhost_precmd ${precmd_functions:#__termhost_*} __termhost_precmd_last)
	preexec_functions=(${preexec_functions:#__termhost_*} __termhost_preexec)
	zshaddhistory_functions=(${zshaddhistory_functions:#__termhost_*} __termhost_zshaddhistory)
}
typeset -ga precmd_functions preexec_functions zshaddhistory_functions
__termhost_order_hooks
fi
