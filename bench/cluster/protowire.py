"""Protobuf wire format by hand, for the Python grpcio clients (bench/cluster/grpcio-load.py
and test/fixtures/grpcio-client.py), so that they need no generated code: only
python3-grpcio. Length-delimited and varint fields only (what kv.v1 and etcd's KV use)."""


def varint(n):
    out = bytearray()
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def field(no, data):
    """A length-delimited field `no` holding `data` (bytes)."""
    return varint(no << 3 | 2) + varint(len(data)) + data


def vfield(no, n):
    """A varint field `no` holding `n`."""
    return varint(no << 3) + varint(n)


def fields(buf):
    """Length-delimited and varint fields of a message: {number: [values]}."""
    out, at = {}, 0
    while at < len(buf):
        tag, at = read_varint(buf, at)
        no, wire = tag >> 3, tag & 7
        if wire == 2:
            n, at = read_varint(buf, at)
            out.setdefault(no, []).append(buf[at : at + n])
            at += n
        elif wire == 0:
            v, at = read_varint(buf, at)
            out.setdefault(no, []).append(v)
        else:
            raise ValueError("unexpected wire type %d" % wire)
    return out


def read_varint(buf, at):
    """The varint at `at` and the offset after it."""
    shift = result = 0
    while True:
        b = buf[at]
        at += 1
        result |= (b & 0x7F) << shift
        if b < 0x80:
            return result, at
        shift += 7
