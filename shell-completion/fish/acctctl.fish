# acctctl(1) completion for fish
#
# What the bash completion (shell-completion/bash/acctctl) completes, the fish
# way: commands with their summaries, every command's options with their
# values (sort keys, -o fields, --since forms, quantities for compare), and
# cgroup paths asked from acctd with `acctctl list --no-legend --output=cgroup`,
# honouring --address and $ACCTD_ADDRESS (nothing when acctd is not running).
# tests/integration/test_shell_completion.py checks that bash's, zsh's and
# fish's completions name every command, option, field and quantity that
# acctctl's help lists, and runs this file in a real fish.

# The words before the cursor that acctctl's getopt leaves as arguments: the
# command and its arguments, without the options and their values.
function __acctctl_args
    set -l skip 0
    for t in (commandline -opc)[2..-1]
        if test $skip = 1
            set skip 0
            continue
        end
        switch $t
            case --address --sort --top --depth --output --iterations --delay --prefix --bytes-budget \
                --cpu-budget --tasks-budget --auto-tune --since --until --step --plot --group-by-level \
                --charge --color -o -n -d
                set skip 1
            case '-*'
            case '*'
                echo $t
        end
    end
end

# Whether the command is one of $argv ("": none yet).
function __acctctl_using
    set -l a (__acctctl_args)
    contains -- "$a[1]" $argv
end

# Whether the command has $argv[1] arguments before the cursor.
function __acctctl_nargs
    test (count (__acctctl_args)) -eq (math $argv[1] + 1)
end

# cgroup paths from the running daemon, at the command line's --address
function __acctctl_cgroups
    set -l tokens (commandline -opc)
    set -l address
    for i in (seq 2 (count $tokens))
        switch $tokens[$i]
            case '--address=*'
                set address $tokens[$i]
            case --address
                set address --address $tokens[(math $i + 1)]
        end
    end
    command acctctl $address --no-pager --no-legend --output=cgroup list 2>/dev/null
end

# -o/--output's FIELD[,FIELD...] (acctctl list --output=help): the last field,
# after those before it
function __acctctl_fields
    set -l value (string replace -r -- '^(--output=|-o)' '' (commandline -ct))
    set -l before (string match -r -- '^.*,' $value)
    for f in cgroup state memory bound cpu load psi-cpu psi-mem psi-io tasks read/s write/s read write age charge charge-bound
        echo "$before$f" # quoted: an empty list is ""
    end
    test -z "$before"; and echo help
end

complete -c acctctl -f

# commands (acctctl --help), before any: name and summary
set -l commands \
    status    "The daemon: cgroups, passes, budgets, checks, reloads" \
    list      "Cgroups with memory, CPU, load, pressure, tasks, I/O (default)" \
    show      "Every value of one cgroup with its bound and age" \
    top       "Live view of the busiest cgroups, like systemd-cgtop" \
    watch     "Print a cgroup's values whenever they change" \
    compare   "Is QUANTITY above, below or equal to THRESHOLD?" \
    charge    "Charge DELTA of RESOURCE to a cgroup (programs' usage)" \
    usage     "What cgroups used over a window, from the history" \
    history   "A cgroup's memory and CPU over time, plotted" \
    tune      "Show or change (admin) error budgets and auto-tuning" \
    reconcile "Sample every cgroup now and report (admin)" \
    reload    "Reload acctd's configuration (admin)" \
    help      "This help, or a command's"
for i in (seq 1 2 (count $commands))
    complete -c acctctl -n '__acctctl_using ""' -a $commands[$i] -d $commands[(math $i + 1)]
end

# options of every command
complete -c acctctl -s h -l help -d 'Show help'
complete -c acctctl -l version -d 'Show the version'
complete -c acctctl -l address -x -a unix:/run/acctd/io.acctd -d 'Talk to acctd at this address'
complete -c acctctl -l json -a 'short pretty lines' -d 'Print JSON'
complete -c acctctl -l no-legend -d 'No column headers and footers'
complete -c acctctl -l no-pager -d 'Do not pipe output into a pager'
complete -c acctctl -s l -l full -d 'Do not shorten cgroup paths to the terminal width'
complete -c acctctl -l color -x -a 'auto always never' -d 'Colour in top'

# each command's options
set -l sortkeys path memory cpu load pressure io tasks read/s write/s read write charge
# systemd.time(7): the words, and a few relative times to start from
set -l times now today yesterday tomorrow -1h -10min -1d
complete -c acctctl -n '__acctctl_using list' -l tree -d 'Children below their parent, indented'
complete -c acctctl -n '__acctctl_using list' -s a -l all -d 'Also removed cgroups'
complete -c acctctl -n '__acctctl_using list' -l charge -x -d 'A column of a charged resource'
complete -c acctctl -n '__acctctl_using list top' -l sort -x -a "$sortkeys" -d 'Sort key (path: tree order; others largest first)'
complete -c acctctl -n '__acctctl_using list usage' -l top -x -d 'Only the first N cgroups of the sort'
complete -c acctctl -n '__acctctl_using list top usage' -l depth -x -a all -d 'At most N levels below the prefix'
complete -c acctctl -n '__acctctl_using list top' -s o -l output -x -a '(__acctctl_fields)' -d 'Only these columns'
complete -c acctctl -n '__acctctl_using show' -l precise -d 'Read the counters precisely, memory and CPU now'
complete -c acctctl -n '__acctctl_using show' -l fresh -d 'The same as --precise'
complete -c acctctl -n '__acctctl_using top' -s n -l iterations -x -d 'Stop after N iterations'
complete -c acctctl -n '__acctctl_using top' -s b -l batch -d 'Batch mode: plain tables, no keys'
complete -c acctctl -n '__acctctl_using top watch' -s d -l delay -x -d 'Interval (seconds, or 500ms, 2s, 1min)'
complete -c acctctl -n '__acctctl_using watch usage' -l prefix -x -a '(__acctctl_cgroups)' -d 'Cgroups under PATH'
complete -c acctctl -n '__acctctl_using compare' -s q -l quiet -d 'Print nothing; use the exit status'
complete -c acctctl -n '__acctctl_using charge' -l cgroup -x -a '(__acctctl_cgroups)' -d "Charge PATH instead of acctctl's own cgroup"
complete -c acctctl -n '__acctctl_using charge' -l sync -d "Return once the charge is in acctd's state file"
complete -c acctctl -n '__acctctl_using usage history' -l since -x -a "$times" -d 'Start of the window'
complete -c acctctl -n '__acctctl_using usage history' -l until -x -a "$times" -d 'End of the window'
complete -c acctctl -n '__acctctl_using usage' -l no-removed -d 'Leave out cgroups removed by the end of the window'
complete -c acctctl -n '__acctctl_using usage' -l group-by-level -x -d 'One row per cgroup N levels below the root'
complete -c acctctl -n '__acctctl_using usage' -l charge -x -d 'Also what each cgroup held of a charged resource'
complete -c acctctl -n '__acctctl_using usage' -l sort -x -a 'path cpu memory io read write' -d 'Sort key (path: tree order; others largest first)'
complete -c acctctl -n '__acctctl_using usage history' -l csv -d 'Comma-separated values'
complete -c acctctl -n '__acctctl_using history' -l step -x -d 'Length of a step (a duration)'
complete -c acctctl -n '__acctctl_using history' -l plot -x -a 'memory cpu io tasks charge none' -d 'What to plot'
complete -c acctctl -n '__acctctl_using history' -l charge -x -d 'A charged resource instead'
complete -c acctctl -n '__acctctl_using tune' -l bytes-budget -x -d 'Memory error budget (64M, 1.5G)'
complete -c acctctl -n '__acctctl_using tune' -l cpu-budget -x -d 'CPU time error budget (10ms, 1.5s)'
complete -c acctctl -n '__acctctl_using tune' -l tasks-budget -x -d 'Tasks error budget'
complete -c acctctl -n '__acctctl_using tune' -l auto-tune -x -a 'yes no' -d 'Let the tuner move batches within the budgets'

# arguments: cgroups, compare's QUANTITY, help's COMMAND
complete -c acctctl -n '__acctctl_using list top show history compare; and __acctctl_nargs 0' -a '(__acctctl_cgroups)'
complete -c acctctl -n '__acctctl_using watch usage' -a '(__acctctl_cgroups)'
complete -c acctctl -n '__acctctl_using compare; and __acctctl_nargs 1' -a 'memory memory.working_set memory.peak
    memory.max memory.high swap swap.max cpu.usage cpu.user cpu.system cpu.periods cpu.throttled_periods
    cpu.throttled tasks io.read_bytes io.write_bytes io.read_ios io.write_ios io.discard_bytes io.discard_ios
    memory.events.low memory.events.high memory.events.max memory.events.oom memory.events.oom_kill
    memory.events.oom_group_kill memory.under_oom psi.cpu.some psi.cpu.full psi.memory.some psi.memory.full
    psi.io.some psi.io.full'
complete -c acctctl -n '__acctctl_using help; and __acctctl_nargs 0' \
    -a 'status list show top watch compare charge usage history tune reconcile reload help'
