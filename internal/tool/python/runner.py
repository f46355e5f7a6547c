# The python_code_tool runner. The executor starts it as
#   python3 -I -B -c <this file> <limits JSON>
# with {"code": ..., "input": ...} on stdin. It sets the resource limits,
# runs the tool's code, calls its main(input) and writes one JSON envelope
# on the original stdout: {"ok": true, "output": <value>} or
# {"ok": false, "error": "<exception line>", "traceback": "..."}.
# Whatever the code prints goes to stderr, so it cannot corrupt the envelope.
import json
import linecache
import os
import resource
import sys
import traceback

FILENAME = "<tool>"


def envelope_of_exception(exc):
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if f.filename == FILENAME]
    return {
        "ok": False,
        "error": "".join(traceback.format_exception_only(type(exc), exc)).strip(),
        "traceback": "".join(traceback.format_list(frames)),
    }


def run(request):
    code = request["code"]
    # Let tracebacks quote the tool's own source lines.
    linecache.cache[FILENAME] = (len(code), None, code.splitlines(True), FILENAME)
    namespace = {"__name__": "__tool__", "__builtins__": __builtins__}
    try:
        exec(compile(code, FILENAME, "exec"), namespace)
        main = namespace.get("main")
        if not callable(main):
            return {"ok": False, "error": "the code defines no main(input) function", "traceback": ""}
        output = main(request["input"])
    except BaseException as exc:  # SystemExit and KeyboardInterrupt are the script's errors too
        return envelope_of_exception(exc)
    try:
        json.dumps(output, allow_nan=False)
    except (TypeError, ValueError) as exc:
        return {"ok": False, "error": "main returned a value that is not JSON: %s" % exc, "traceback": ""}
    return {"ok": True, "output": output}


def main():
    limits = json.loads(sys.argv[1])
    request = json.loads(sys.stdin.buffer.read())
    out = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(2, 1)
    sys.argv = ["tool"]
    for name, soft, hard in limits:
        resource.setrlimit(getattr(resource, name), (soft, hard))
    envelope = run(request)
    out.write(json.dumps(envelope, allow_nan=False))
    out.flush()
    sys.stdout.flush()
    os._exit(0)


main()
