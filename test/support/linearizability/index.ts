/** The linearizability checker for key-value histories (test tooling; see check.ts). */
export {
  assertLinearizable,
  type CheckOptions,
  type CheckResult,
  checkLinearizability,
  type Violation,
} from "./check.js";
export {
  assertTxnLinearizable,
  checkTxnLinearizability,
  formatTxnOperation,
  type TxnCheckResult,
  type TxnOperation,
} from "./check-txn.js";
export { formatOperation, formatValue } from "./format.js";
export { HistoryRecorder } from "./history-recorder.js";
export { ILLEGAL, type KvState, kvStep } from "./kv-model.js";
export type { KvInput, KvOperation, KvOutput } from "./operation.js";
export type {
  TxnCompare,
  TxnInput,
  TxnKv,
  TxnOp,
  TxnOpResult,
  TxnOutput,
  TxnState,
} from "./txn-model.js";
