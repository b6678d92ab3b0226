# termhost shell integration for PowerShell 7 (pwsh).
#
# termhost starts pwsh as `pwsh -NoLogo -NoExit -Command ". '<this file>'"`, which
# pwsh runs once the person's profiles have been loaded. It marks the prompt and
# every command with OSC 633 sequences, each ended by BEL:
#
#   ESC]633;A BEL                 the prompt begins
#   ESC]633;B BEL                 the prompt ends: what follows is typed
#   ESC]633;E;<line>;<nonce> BEL  the command line about to run
#   ESC]633;C BEL                 the command starts running
#   ESC]633;D;<code> BEL          the command finished, with its exit status
#   ESC]633;P;Cwd=<dir> BEL       the current directory, at every prompt
#
# In <line> and <dir> a backslash is written \\, a ';' \x3b and any control
# character \xHH. The person's prompt function is kept and called from ours;
# E and C come from PSReadLine's AddToHistoryHandler, which PSReadLine calls with
# each line it accepts, and any handler the person set is called from ours.
# Without PSReadLine there are no E and C marks, and so no D either; PSReadLine
# does not call the handler for a line that repeats the one before it while
# HistoryNoDuplicates is on (its default), so such a line is not marked.
#
# Not tested by termhost's test suite (no pwsh where it runs).

if ($null -eq (Get-Variable -Name __TermhostIntegration -Scope Global -ErrorAction SilentlyContinue)) {
    $global:__TermhostIntegration = @{
        Nonce            = [string]$env:VSCODE_NONCE
        Ran              = $false
        UserPrompt       = $function:prompt
        UserAddToHistory = $null
        Esc              = [string][char]0x1b
        Bel              = [string][char]0x07
    }
    # The nonce lives on in a shell variable only: programs never see it.
    Remove-Item -Path env:VSCODE_NONCE -ErrorAction SilentlyContinue

    # __TermhostEscape VALUE: VALUE as a mark carries it.
    function global:__TermhostEscape {
        param([string]$Value)
        $sb = [System.Text.StringBuilder]::new()
        foreach ($ch in $Value.ToCharArray()) {
            $n = [int]$ch
            if ($n -eq 0x5c) { [void]$sb.Append('\\') }
            elseif ($n -eq 0x3b) { [void]$sb.Append('\x3b') }
            elseif ($n -lt 0x20 -or $n -eq 0x7f) { [void]$sb.Append('\x' + $n.ToString('x2')) }
            else { [void]$sb.Append($ch) }
        }
        $sb.ToString()
    }

    function global:__TermhostMark {
        param([string]$Body)
        $s = $global:__TermhostIntegration
        $s.Esc + ']633;' + $Body + $s.Bel
    }

    function global:prompt {
        # First, while they still say how the command ended.
        $ok = $?
        $native = $global:LASTEXITCODE
        $s = $global:__TermhostIntegration
        $marks = ''
        if ($s.Ran) {
            $s.Ran = $false
            if ($ok) { $code = 0 }
            elseif ($native -is [int] -and $native -ne 0) { $code = $native }
            else { $code = 1 }
            $marks += __TermhostMark "D;$code"
        }
        $loc = $ExecutionContext.SessionState.Path.CurrentLocation
        if ($loc.Provider.Name -eq 'FileSystem') {
            $marks += __TermhostMark ('P;Cwd=' + (__TermhostEscape $loc.ProviderPath))
        }
        $marks += __TermhostMark 'A'
        if ($s.UserPrompt) {
            $userPrompt = (& $s.UserPrompt) -join ''
        } else {
            $userPrompt = "PS $loc$('>' * ($NestedPromptLevel + 1)) "
        }
        $global:LASTEXITCODE = $native
        $marks + $userPrompt + (__TermhostMark 'B')
    }

    if (Get-Module -Name PSReadLine) {
        # VSCODE_PREVENT_SHELL_HISTORY=1 keeps this shell's commands out of the
        # person's history file.
        if ($env:VSCODE_PREVENT_SHELL_HISTORY -eq '1') {
            Set-PSReadLineOption -HistorySaveStyle SaveNothing
        }
        $global:__TermhostIntegration.UserAddToHistory = (Get-PSReadLineOption).AddToHistoryHandler
        Set-PSReadLineOption -AddToHistoryHandler {
            param([string]$line)
            $s = $global:__TermhostIntegration
            $s.Ran = $true
            [Console]::Write((__TermhostMark ('E;' + (__TermhostEscape $line) + ';' + $s.Nonce)) + (__TermhostMark 'C'))
            $user = $s.UserAddToHistory
            if ($null -eq $user) { return $true }
            if ($user -is [scriptblock]) { return & $user $line }
            return $user.Invoke($line)
        }
    }
}
