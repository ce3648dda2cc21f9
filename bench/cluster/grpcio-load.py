"""A load generator process of the cluster benchmarks driven by Python grpcio (the standard
C-core client), the counterpart of load-client.ts for that client: one channel to one
member, `inFlight` calls outstanding (a blocking call loop when 1, futures otherwise),
kv-engine's kv.v1.KvService or etcd's etcdserverpb.KV, hand-encoded protobuf (no
generated code: only python3-grpcio is needed).

Protocol on stdio, one JSON object a line, in this order: the parent writes the spec
(LoadSpec of load-client.ts); the child connects (one untimed call of the workload) and
writes {"type": "ready"}, or {"type": "failed", "error": ...}; the parent writes
{"type": "go"}; the child runs warmupMs then durationMs and writes
{"type": "result", "result": LoadResult} (calls completed inside the window), then exits.
With `coldCalls` in the spec the window opens at the first call after "go" and holds
exactly that many calls (no untimed call before; warmupMs and durationMs are ignored).
With `ratePerSec` it runs an open loop (see open_loop; LoadSpec.ratePerSec).
The result's clientCpuSeconds is this process's CPU (every thread) during the window.
"""
import json
import random
import sys
import threading
import time

import grpc

from protowire import field, fields, vfield


ident = lambda b: b


def operations(spec, channel):
    """The spec's next call, as (method, request, rows of its response): etcd's API workloads
    are etcd-ops.ts's (put, get, scan, Kubernetes' txn update and paginated list)."""
    rnd = random.Random(spec["seed"])
    pool = random.Random(spec["seed"] ^ 0x5EED).randbytes(1 << 20)
    size = spec["valueSize"]
    counter = [0]

    def value():
        n = counter[0]
        counter[0] += 1
        at = (n * size) % (len(pool) - size)
        return pool[at : at + size]

    key = lambda i: b"key_%012d" % i
    pick = lambda: rnd.randrange(spec["keySpace"])
    rows = spec["scanRows"]
    scan_start = lambda: rnd.randrange(max(1, spec["keySpace"] - rows))
    unary = lambda path: channel.unary_unary(path, ident, ident)
    api = spec.get("api", "etcd" if spec["kind"] == "etcd" else "kv")
    no_rows = lambda response: 0
    if api == "kv":
        put_m, get_m = unary("/kv.v1.KvService/Put"), unary("/kv.v1.KvService/Get")
        scan_m = channel.unary_stream("/kv.v1.KvService/Scan", ident, ident)
        put = lambda: (put_m, field(1, key(pick())) + field(2, value()), no_rows)
        get = lambda: (get_m, field(1, key(pick())), no_rows)

        def scan():
            s = scan_start()
            req = field(1, key(s)) + field(2, key(s + rows)) + vfield(3, rows)
            return scan_m, req, lambda ms: sum(len(fields(m).get(1, [])) for m in ms)

        calls = {"put": put, "get": get, "scan": scan}
    else:
        put_m, range_m = unary("/etcdserverpb.KV/Put"), unary("/etcdserverpb.KV/Range")
        txn_m = unary("/etcdserverpb.KV/Txn")
        put = lambda: (put_m, field(1, key(pick())) + field(2, value()), no_rows)
        get = lambda: (range_m, field(1, key(pick())), no_rows)

        def scan():
            s = scan_start()
            req = field(1, key(s)) + field(2, key(s + rows)) + vfield(3, rows)
            return range_m, req, lambda r: len(fields(r).get(2, []))

        seen = {}

        def txn():
            i = pick()
            k = key(i)
            compare = vfield(2, 2) + field(3, k) + vfield(6, seen.get(i, 0))
            req = (
                field(1, compare)
                + field(2, field(2, field(1, k) + field(2, value())))
                + field(3, field(1, field(1, k)))
            )

            def answered(r):
                f = fields(r)
                if f.get(2, [0])[0]:
                    seen[i] = fields(f[1][0]).get(3, [0])[0]
                else:
                    kvs = fields(fields(f[3][0])[1][0]).get(2, [])
                    seen[i] = fields(kvs[0]).get(3, [0])[0] if kvs else 0
                return 0

            return txn_m, req, answered

        def list_pages(req, timeout=None):
            """Every page of the list (a blocking call: list runs on threads)."""
            start, end, revision, total = b"key_", b"key`", 0, 0
            while True:
                req_page = field(1, start) + field(2, end) + vfield(3, rows)
                if revision:
                    req_page += vfield(4, revision)
                f = fields(range_m(req_page, timeout=timeout))
                kvs = f.get(2, [])
                total += len(kvs)
                revision = fields(f[1][0]).get(3, [0])[0]
                if not f.get(3, [0])[0] or not kvs:
                    return total
                start = fields(kvs[-1])[1][0] + b"\0"

        lst = lambda: (list_pages, b"", lambda total: total)
        calls = {"put": put, "get": get, "scan": scan, "txn": txn, "list": lst}
    op = spec["op"]
    if op == "mixed":
        return lambda: put() if rnd.random() < 0.5 else get()
    return calls[op]


def blocking_only(spec):
    """Calls without a future: a kv.v1 scan (a server stream) and a list (several calls)."""
    api = spec.get("api", "etcd" if spec["kind"] == "etcd" else "kv")
    return (api == "kv" and spec["op"] == "scan") or spec["op"] == "list"


def settle(spec, response):
    """The response in full (a server stream is read to its end)."""
    api = spec.get("api", "etcd" if spec["kind"] == "etcd" else "kv")
    return list(response) if api == "kv" and spec["op"] == "scan" else response


def send(message):
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def open_loop(spec, next_call, now, start, end, record, timeout):
    """LoadSpec.ratePerSec: call i is due i / rate s after go (the window's start less the
    warm-up), starts then or, while inFlight calls are outstanding, when one ends; its
    latency counts from when it was due; the window holds the calls due inside it, each
    waited for. `record(due, response, err, rows_of)` counts a call of the window."""
    if blocking_only(spec):
        raise ValueError("an open loop needs calls with futures, not %s" % spec["op"])
    interval = 1e9 / spec["ratePerSec"]
    go = start - spec["warmupMs"] * 1_000_000
    slots = threading.Semaphore(spec["inFlight"])
    outstanding = [0]
    idle = threading.Condition()

    def finished(f, due, rows_of):
        try:
            response, err = f.result(), None
        except grpc.RpcError as e:
            response, err = None, "%s: %s" % (e.code().name, e.details())
        if due >= start:
            record(due, response, err, rows_of)
        slots.release()
        with idle:
            outstanding[0] -= 1
            idle.notify_all()

    i = 0
    while True:
        due = go + i * interval
        if due >= end:
            break
        ahead = due - now()
        if ahead > 0:
            time.sleep(ahead / 1e9)
        slots.acquire()
        with idle:
            outstanding[0] += 1
        method, req, rows_of = next_call()
        future = method.future(req, timeout=timeout)
        future.add_done_callback(lambda f, due=due, rows_of=rows_of: finished(f, due, rows_of))
        i += 1
    with idle:
        idle.wait_for(lambda: outstanding[0] == 0)


def run(spec, next_call):
    timeout = spec["timeoutMs"] / 1000
    out = {"ops": 0, "rows": 0, "errors": 0, "latenciesNs": [], "windowSeconds": 0}
    cold = "coldCalls" in spec
    now = time.perf_counter_ns
    if cold:
        start, end, limit = now(), float("inf"), spec["coldCalls"]
    else:
        start = now() + spec["warmupMs"] * 1_000_000
        end = start + spec["durationMs"] * 1_000_000
        limit = float("inf")
    lock = threading.Lock()
    cpu = {"start": time.process_time()} if cold else {}
    started = [0]

    def admit():
        """Whether another call may start (the window is open, the cold count not reached)."""
        with lock:
            if now() >= end or started[0] >= limit:
                return False
            started[0] += 1
            return True

    def sample_cpu():
        # The process's CPU (every thread: C-core's included) when the window opens and closes.
        t = now()
        if "start" not in cpu and t >= start:
            cpu["start"] = time.process_time()
        if "end" not in cpu and t >= end:
            cpu["end"] = time.process_time()

    def record(t0, response, err, rows_of, due=False):
        """Counts a call that started at t0 and ended now, if it ended in the window (or,
        with `due`, whenever it ended: t0 is when it was due, in the window)."""
        t1 = now()
        rows = rows_of(response) if err is None else 0
        with lock:
            sample_cpu()
            if err is not None:
                out["errors"] += 1
                out.setdefault("firstError", err)
            elif due or start <= t1 < end:
                out["ops"] += 1
                out["rows"] += rows
                out["latenciesNs"].append(t1 - t0)

    if "ratePerSec" in spec:
        open_loop(
            spec, next_call, now, start, end,
            lambda t0, r, err, rows_of: record(t0, r, err, rows_of, due=True), timeout,
        )
    elif spec["inFlight"] == 1 or blocking_only(spec):
        # A blocking loop per slot (a server stream, or a list, has no future).
        def slot():
            while admit():
                method, req, rows_of = next_call()
                t0 = now()
                try:
                    response = settle(spec, method(req, timeout=timeout))
                    err = None
                except grpc.RpcError as e:
                    response, err = None, "%s: %s" % (e.code().name, e.details())
                record(t0, response, err, rows_of)
                if err is not None:
                    time.sleep(0.01)

        threads = [threading.Thread(target=slot) for _ in range(spec["inFlight"])]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    else:
        done = threading.Semaphore(0)

        def issue():
            if not admit():
                done.release()
                return
            method, req, rows_of = next_call()
            t0 = now()
            future = method.future(req, timeout=timeout)
            future.add_done_callback(lambda f: finished(f, t0, rows_of))

        def finished(f, t0, rows_of):
            try:
                response, err = f.result(), None
            except grpc.RpcError as e:
                response, err = None, "%s: %s" % (e.code().name, e.details())
            record(t0, response, err, rows_of)
            if err is not None:
                # A failing cluster must not become a busy loop, nor a deep recursion (a
                # future that fails at once runs its callback in the caller).
                time.sleep(0.01)
                threading.Thread(target=issue).start()
                return
            issue()

        for _ in range(spec["inFlight"]):
            issue()
        for _ in range(spec["inFlight"]):
            done.acquire()
    cpu.setdefault("start", time.process_time())
    cpu.setdefault("end", time.process_time())
    out["clientCpuSeconds"] = cpu["end"] - cpu["start"]
    if cold:
        out["windowSeconds"] = (now() - start) / 1e9
    elif "ratePerSec" in spec:
        # To the last call of the window (open_loop waited for it), at least the window.
        out["windowSeconds"] = max(spec["durationMs"] / 1000, (now() - start) / 1e9)
    else:
        out["windowSeconds"] = spec["durationMs"] / 1000
    return out


def main():
    spec = json.loads(sys.stdin.readline())
    channel = grpc.insecure_channel(spec["endpoints"][0])
    next_call = operations(spec, channel)
    cold_spec = "coldCalls" in spec
    try:
        if not cold_spec:
            # Connect: one untimed call of the workload.
            method, req, rows_of = next_call()
            rows_of(settle(spec, method(req, timeout=spec["timeoutMs"] / 1000)))
        else:
            grpc.channel_ready_future(channel).result(timeout=spec["timeoutMs"] / 1000)
    except Exception as e:  # noqa: BLE001 - reported to the parent
        send({"type": "failed", "error": "grpcio: %s" % e})
        return
    send({"type": "ready"})
    line = sys.stdin.readline()
    if json.loads(line or "{}").get("type") != "go":
        return
    result = run(spec, next_call)
    send({"type": "result", "result": result})
    channel.close()


if __name__ == "__main__":
    main()
