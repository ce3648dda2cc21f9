/** Public API of the abstract-level adapter (package entry "kv-engine/level"). */
export { KvEngineLevelError } from "./errors.js";
export {
  CLEAR_BATCH_KEYS,
  KvEngineLevel,
  type KvEngineLevelOptions,
  type KvEngineWriteOptions,
} from "./kv-engine-level.js";
export { KvEngineSnapshot } from "./snapshot.js";
