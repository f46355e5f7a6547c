// Package python runs python_code_tool: the configured tool's code in a
// python3 subprocess under bubblewrap (bwrap), one process per run.
//
// The contract for the code: it defines main(input), which receives the
// run's input (the JSON object the bundle sent, with the session's ids) and
// returns any JSON value, which becomes the run's output. An exception, a
// call to exit, or a return value that is not JSON is the tool's error (the
// caller answers 200 with error set). print() output goes to a log, never
// into the output.
//
// The sandbox: no network (a network namespace of its own), no nested user
// namespaces, the system's /usr mounted read-only and nothing else of the
// host, size-capped private tmpfs mounts at /tmp (the working directory) and
// /dev/shm, an empty environment, no capabilities, an unprivileged user
// (nobody when the worker runs as root), resource limits on CPU time,
// address space, file size, processes and open files, and a memory cgroup
// of its own whose limit counts what the tmpfs mounts hold (without a
// usable cgroup the tool answers 501 unless PYTHON_ALLOW_NO_CGROUP=true).
// The process runs in a session and process group of its own and in a PID
// namespace; when the run's context ends the whole group is killed, and Run
// returns only once it is gone.
//
// Without bwrap the tool answers 501, unless the operator allowed
// unsandboxed runs (PYTHON_ALLOW_UNSANDBOXED=true): then python3 runs with
// the same limits, environment and process-group handling in a temporary
// directory, but with the host's network and file system.
package python
