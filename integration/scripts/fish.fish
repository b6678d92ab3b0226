# termhost shell integration for fish.
#
# termhost starts fish with `--init-command 'source <this file>'`, which fish runs
# once the person's own configuration (config.fish, conf.d, ...) has been read. It
# marks the prompt and every command with OSC 633 sequences, each ended by BEL:
#
#   ESC]633;A BEL                 the prompt begins
#   ESC]633;B BEL                 the prompt ends: what follows is typed
#   ESC]633;E;<line>;<nonce> BEL  the command line about to run
#   ESC]633;C BEL                 the command starts running
#   ESC]633;D;<code> BEL          the command finished, with its exit status
#   ESC]633;P;Cwd=<dir> BEL       the current directory, at every prompt
#
# In <line> and <dir> a backslash is written \\, a ';' \x3b and any control
# character \xHH. fish's events (fish_prompt, fish_preexec, fish_postexec) call
# every handler, so the person's own handlers keep running beside ours; their
# fish_prompt function is kept and called from ours. Everything defined here is
# named __termhost_*.

if not set -q __termhost_integration
    set -g __termhost_integration 1

    # The nonce lives on in a shell variable only: programs never see it.
    set -g __termhost_nonce $VSCODE_NONCE
    set -e VSCODE_NONCE

    # VSCODE_PREVENT_SHELL_HISTORY=1 keeps this shell's commands out of the
    # person's history: an empty history session name saves nothing to disk.
    if test "$VSCODE_PREVENT_SHELL_HISTORY" = 1
        set -g fish_history ''
    end

    set -g __termhost_ran 0

    # __termhost_escape VALUE: prints VALUE as a mark carries it.
    function __termhost_escape
        set -l parts
        for part in (string split \n -- $argv[1])
            set part (string replace -a -- '\\' '\\\\' $part)
            set part (string replace -a -- ';' '\\x3b' $part)
            if string match -qr -- '[\x00-\x1f\x7f]' $part
                set -l out ''
                for c in (string split '' -- $part)
                    if string match -qr -- '[\x00-\x1f\x7f]' $c
                        set c (printf '\\\\x%02x' "'$c")
                    end
                    set out "$out$c"
                end
                set part $out
            end
            set -a parts $part
        end
        string join -- '\x0a' $parts
    end

    function __termhost_on_prompt --on-event fish_prompt
        if test $__termhost_ran = 1
            # A command that fish_postexec did not see end (an interrupted one).
            set -g __termhost_ran 0
            printf '\e]633;D\a'
        end
        __termhost_keep_prompt
        set -l cwd (__termhost_escape "$PWD")
        printf '\e]633;P;Cwd=%s\a' "$cwd"
        printf '\e]633;A\a'
    end

    function __termhost_on_preexec --on-event fish_preexec
        set -g __termhost_ran 1
        set -l line (__termhost_escape "$argv[1]")
        printf '\e]633;E;%s;%s\a\e]633;C\a' "$line" "$__termhost_nonce"
    end

    function __termhost_on_postexec --on-event fish_postexec
        set -l st $status
        if test $__termhost_ran = 1
            set -g __termhost_ran 0
            printf '\e]633;D;%s\a' $st
        end
    end

    # The prompt ends with B: fish_prompt becomes ours, calling the person's,
    # which is kept as __termhost_user_prompt. When something defines fish_prompt
    # anew, the new one is taken in the same way at the next prompt.
    function __termhost_keep_prompt
        if set -q __termhost_prompt_ours; and functions -q fish_prompt
            set -l origin (functions --details fish_prompt)
            if test "$origin" = "$__termhost_prompt_ours"
                return
            end
        end
        functions -e __termhost_user_prompt
        if functions -q fish_prompt
            functions -c fish_prompt __termhost_user_prompt
        else
            function __termhost_user_prompt
            end
        end
        function fish_prompt
            # First, so that the person's prompt still sees the command's $status.
            __termhost_user_prompt
            printf '\e]633;B\a'
        end
        set -g __termhost_prompt_ours (functions --details fish_prompt)
    end
    __termhost_keep_prompt
end
