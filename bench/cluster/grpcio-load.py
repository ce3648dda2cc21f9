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
    """The spec's call as (method, request factory, rows of a response)."""
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
    if spec["kind"] == "kv-engine":
        put = (unary("/kv.v1.KvService/Put"), lambda: field(1, key(pick())) + field(2, value()))
        get = (unary("/kv.v1.KvService/Get"), lambda: field(1, key(pick())))
        scan_call = channel.unary_stream("/kv.v1.KvService/Scan", ident, ident)

        def scan_req():
            s = scan_start()
            return field(1, key(s)) + field(2, key(s + rows)) + vfield(3, rows)

        scan = (scan_call, scan_req)
    else:
        put = (unary("/etcdserverpb.KV/Put"), lambda: field(1, key(pick())) + field(2, value()))
        get = (unary("/etcdserverpb.KV/Range"), lambda: field(1, key(pick())))

        def scan_req():
            s = scan_start()
            return field(1, key(s)) + field(2, key(s + rows)) + vfield(3, rows)

        scan = (unary("/etcdserverpb.KV/Range"), scan_req)
    op = spec["op"]
    if op == "mixed":
        return lambda: put if rnd.random() < 0.5 else get
    chosen = {"put": put, "get": get, "scan": scan}[op]
    return lambda: chosen


def count_rows(spec, response):
    """Rows a scan returned (kv-engine: a stream of ScanResponse; etcd: one RangeResponse)."""
    if spec["op"] != "scan":
        return 0
    if spec["kind"] == "kv-engine":
        return sum(len(fields(m).get(1, [])) for m in response)
    return len(fields(response).get(2, []))


def settle(spec, response):
    """The response in full (a server stream is read to its end)."""
    return list(response) if spec["kind"] == "kv-engine" and spec["op"] == "scan" else response


def send(message):
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


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

    def record(t0, response, err):
        t1 = now()
        with lock:
            sample_cpu()
            if err is not None:
                out["errors"] += 1
                out.setdefault("firstError", err)
            elif start <= t1 < end:
                out["ops"] += 1
                out["rows"] += count_rows(spec, response)
                out["latenciesNs"].append(t1 - t0)

    if spec["inFlight"] == 1 or (spec["kind"] == "kv-engine" and spec["op"] == "scan"):
        # A blocking loop per slot (a server stream has no future).
        def slot():
            while admit():
                method, req = next_call()
                t0 = now()
                try:
                    response = settle(spec, method(req(), timeout=timeout))
                    err = None
                except grpc.RpcError as e:
                    response, err = None, "%s: %s" % (e.code().name, e.details())
                record(t0, response, err)
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
            method, req = next_call()
            t0 = now()
            future = method.future(req(), timeout=timeout)
            future.add_done_callback(lambda f: finished(f, t0))

        def finished(f, t0):
            try:
                response, err = f.result(), None
            except grpc.RpcError as e:
                response, err = None, "%s: %s" % (e.code().name, e.details())
            record(t0, response, err)
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
    out["windowSeconds"] = (
        (now() - start) / 1e9 if cold else spec["durationMs"] / 1000
    )
    return out


def main():
    spec = json.loads(sys.stdin.readline())
    channel = grpc.insecure_channel(spec["endpoints"][0])
    next_call = operations(spec, channel)
    cold_spec = "coldCalls" in spec
    try:
        if not cold_spec:
            # Connect: one untimed call of the workload.
            method, req = next_call()
            settle(spec, method(req(), timeout=spec["timeoutMs"] / 1000))
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
