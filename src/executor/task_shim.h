// berth-exec, the task shim: the process that supervises one task's
// process on a berth-node machine (as containerd-shim or Nomad's executor
// do), so that the task outlives a restart of berth-node and how it ended
// is still known afterwards. ProcessExecutor (process_executor.h) starts
// one per task; nobody else should.
//
//   berth-exec --dir DIR [--grace-ms N] [--workdir W] [--env-file FILE]
//              [--log-max-bytes N] [--log-max-files N]
//              [(--cgroup CG | --cgroup-v1 CONTROLLER=DIR...)
//               [--cpu-max "QUOTA PERIOD"] [--memory-max BYTES] [--pids-max N]]
//              -- COMMAND [ARG]...
//
//   --dir            the task's directory (task_dir.h): must exist
//   --grace-ms       between SIGTERM and SIGKILL when stopping; default 10000
//   --workdir        where the task runs; default: the shim's own directory
//   --env-file       NAME=VALUE entries (task_dir.h's env file) added to the
//                    environment the shim inherited, a later entry of a name
//                    winning; the shim removes the file once read. Values
//                    never stand on a command line, which every local user
//                    can read in /proc/PID/cmdline
//   --log-max-bytes  per output log file (log_files.h); default 10 MiB
//   --log-max-files  output log files kept, output.log included; default 3
//   --cgroup         a cgroup v2 directory (absolute) for the task alone,
//                    made when missing; the parent's subtree_control must
//                    enable the controllers the limits need (PrepareLimits,
//                    process_executor.h). Default: none, the task stays in
//                    the shim's cgroup
//   --cgroup-v1      instead of --cgroup, on cgroup v1: the task's directory
//                    (absolute) in the hierarchy of CONTROLLER (memory,
//                    cpu, cpuacct or pids), made when missing with its parent
//                    (berth's group); repeated, one per hierarchy
//   --cpu-max        written to CG/cpu.max (v1: the period to
//                    cpu.cfs_period_us, then the quota, max as -1, to
//                    cpu.cfs_quota_us of the cpu directory): QUOTA microseconds (1000 or
//                    more, or "max") per PERIOD (1000 to 1000000); needs
//                    --cgroup
//   --memory-max     written to CG/memory.max (v1: memory.limit_in_bytes
//                    of the memory directory), in bytes (1 or more); needs
//                    --cgroup or --cgroup-v1 memory=DIR
//   --pids-max       written to CG/pids.max (v1: pids.max of the pids
//                    directory): the most processes and threads the task's
//                    cgroup may hold at once, from 1 to 4194304 (Linux's
//                    PID_MAX_LIMIT); a fork beyond fails with EAGAIN. Needs
//                    --cgroup or --cgroup-v1 pids=DIR
//
// The shim leaves berth-node's session (a berth-node or terminal that goes
// away takes no signal to it) and becomes the subreaper of the task's
// descendants. It runs COMMAND in a process group of its own with stdin
// from /dev/null, writes DIR/pid, and copies the task's stdout and stderr
// to DIR/output.log line by line. On SIGTERM (or SIGINT) it sends SIGTERM
// to the task's group, and SIGKILL if the task's process has not exited
// --grace-ms later. When the task's process exits, the shim kills
// whatever is left of its group and of its other descendants, so nothing
// of a task outlives it, writes DIR/exit and exits 0. When COMMAND cannot
// run (no such program, a bad workdir) DIR/exit says "rejected" and why.
//
// With --cgroup, before the task's command runs (the child waits for it,
// as for DIR/pid), the shim makes CG, writes cpu.max, memory.max and
// pids.max when given, and moves the child into CG (the shim itself stays out of it).
// When one of these fails, the child is killed before it runs anything and
// the task is rejected: "cannot apply limits: <file>: <why>". When the
// task's process exits, everything still in CG is killed too (CG/
// cgroup.kill, Linux 5.14, or each pid of CG/cgroup.procs), which catches
// processes that left the task's group and session, and then CG is
// removed (when that fails, shim.log says so). Before that, when the
// kernel killed a process of the task for its memory limit (oom_kill in
// CG/memory.events, v1: memory.oom_control), DIR/exit says so
// (oom_killed, task_dir.h). With --cgroup-v1 the same holds of each
// directory (cgroup v1 has no cgroup.kill).
//
// Exit status: 0 once DIR/exit is written; 2 for bad arguments (a message
// on stderr); 1 when DIR/exit cannot be written.
#pragma once

namespace berth::executor {

// The whole program, as main runs it; single-threaded, and it forks, so
// call it only from a process of its own (berth_exec_main.cc).
int RunTaskShim(int argc, char** argv);

}  // namespace berth::executor
