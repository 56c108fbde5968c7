/** The pure compiler: no I/O, no clock, no randomness. */
export { compile, createCompiler, phaseIssues, PLACEMENT, NO_COMPILER_MEMO, type Compiler, type CompilerMemo } from './compile.js';
export { NO_MEMO, type Memo } from './memo.js';
export { approxTokens, ESTIMATE_COUNTER, type TokenCounter, type ToolDefinitionForCount } from './tokens.js';
export { sha256Hex } from './digest.js';
export { planCache, routeKeyFor, CACHE_RULES, CACHE_SCHEMA_VERSION, PROVIDER_MINIMUM_TOKENS, type CacheRule } from './cache-plan.js';
export { DEFAULT_POLICY, DEFAULT_BLOCK_LIMITS, mergePolicy, type PolicyOverride } from './policy.js';
export { RUNTIME_SCOPES, RUNTIME_POLICY, RUNTIME_POLICY_TOOL_USE, preferencesText, appliedPreferences } from './surfaces.js';
export { LABEL_MARKER, LABEL_LINE, labelLine, encodeInputLine, singleLine } from './render.js';
export { parseMemoryNotes, rankMemoryNotes, type MemoryNote } from './memory-notes.js';
export * from './types.js';
export * from './time.js';
export * from './text.js';
export * from './pii.js';
export * from './signals/index.js';
export * from './persona/index.js';
export * from './governance.js';
export * from './hud.js';
