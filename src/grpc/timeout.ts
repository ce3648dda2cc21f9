/**
 * The grpc-timeout request header: 1 to 8 ASCII digits and a unit, H (hours), M (minutes),
 * S (seconds), m (milliseconds), u (microseconds) or n (nanoseconds).
 */
const UNIT_MS: Record<string, number> = {
  H: 3_600_000,
  M: 60_000,
  S: 1000,
  m: 1,
  u: 1e-3,
  n: 1e-6,
};

/** The timeout in milliseconds, or undefined when `value` is not a valid grpc-timeout. */
export function parseGrpcTimeout(value: string): number | undefined {
  const n = value.length;
  if (n < 2 || n > 9) return undefined;
  const scale = UNIT_MS[value[n - 1]!];
  if (scale === undefined) return undefined;
  let digits = 0;
  for (let i = 0; i < n - 1; i++) {
    const c = value.charCodeAt(i) - 48;
    if (c < 0 || c > 9) return undefined;
    digits = digits * 10 + c;
  }
  return digits * scale;
}
