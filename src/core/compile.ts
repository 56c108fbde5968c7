/**
 * The compiler: sources in, the exact prompts a model is given out. Its parts, by concern,
 * are in `compile/`: where each block goes and how it is rendered (`blocks.ts`), the texts
 * it writes and the input checks that name a field (`texts.ts`), the budget (`budget.ts`),
 * the assembly of the prompt from parts laid out once (`assembly.ts`), and what a compiler
 * may remember (`memo.ts`).
 */
import { ProblemError } from '../errors.js';
import { ESTIMATE_COUNTER, type TokenCounter } from './tokens.js';
import { ENGINE_PATTERN, ENGINE_RULE, type CompiledContext, type CompileInput } from './types.js';
import { assemble } from './compile/assembly.js';
import { clockBlock, prepare } from './compile/blocks.js';
import { inputBlocks } from './compile/budget.js';
import { NO_COMPILER_MEMO, type CompilerMemo, type PreparedBlock } from './compile/memo.js';
import { BUILTIN_RUNTIME_POLICY, BUILTIN_RUNTIME_POLICY_TOOL_USE, capabilitiesText, checkPhase, clockText, connectionsText, RUNTIME_SCOPE_SOURCES } from './compile/texts.js';
import { RUNTIME_SCOPES } from './surfaces.js';

export { PLACEMENT } from './compile/blocks.js';
export { NO_COMPILER_MEMO, type CompilerMemo, type InputPart, type PreparedBlock, type PreparedVariant, type StablePart, type ToolTokens } from './compile/memo.js';
export { connectionsText, phaseIssues } from './compile/texts.js';

/** A compiler bound to a memo: `compile` as below, with stable blocks and prefix hashes remembered in `memo`. */
export interface Compiler {
  compile(input: CompileInput): CompiledContext;
}

/**
 * Compiles sources into the exact prompts a model is given. Pure and deterministic: equal
 * inputs give byte-identical output. Identity is always the first block; system blocks
 * follow in cache-class order; advisory and content text is encoded one JSON object per
 * line so it can never forge a label. Mandatory content over its limit throws
 * `CC_BUDGET_EXCEEDED` (never truncated); briefing items, experiences and memory notes
 * are taken in rank order while they fit, so `budget.usedChars <= budget.limitChars` always holds.
 * Stateless: nothing is remembered between calls (see `createCompiler`).
 */
export function compile(input: CompileInput): CompiledContext {
  return compileWith(NO_COMPILER_MEMO, ESTIMATE_COUNTER, input);
}

/**
 * A compiler that remembers rendered blocks, stable prefix hashes and token counts in
 * `memo`, which the caller owns and bounds: byte for byte what `compile` returns, faster on
 * recurring inputs. `tokenizer` counts the cache plan's tokens (default: the estimate); the
 * service passes o200k_base.
 */
export function createCompiler(options: { memo?: CompilerMemo; tokenizer?: TokenCounter } = {}): Compiler {
  const memo = options.memo ?? NO_COMPILER_MEMO;
  const tokenizer = options.tokenizer ?? ESTIMATE_COUNTER;
  return { compile: (input) => compileWith(memo, tokenizer, input) };
}

function compileWith(memo: CompilerMemo, tokenizer: TokenCounter, input: CompileInput): CompiledContext {
  checkPhase(input);
  const warnings: string[] = [];
  const { system, engine } = systemBlocks(memo, tokenizer, input, warnings);
  const { inputs, omitted } = inputBlocks(memo, input, system, warnings);
  return assemble(memo, tokenizer, input, { system, inputs, engine, omitted, warnings });
}

/** The system blocks in layout order (which is also cache-class order), and the engine checked; a 400 or 422 for what cannot give them. */
function systemBlocks(memo: CompilerMemo, tokenizer: TokenCounter, input: CompileInput, warnings: string[]): { system: PreparedBlock[]; engine: string | null } {
  const identity = prepare(memo, 'identity', input.identity);
  if (!identity) {
    throw new ProblemError('CC_UNPROCESSABLE', `The identity (${input.identity.source}) is empty; write who the ${input.subject.kind} is there.`, {
      extensions: { block: 'identity' },
    });
  }
  if (RUNTIME_SCOPES[input.surface] === undefined) {
    throw new ProblemError('CC_VALIDATION_FAILED', `surface must be one of ${Object.keys(RUNTIME_SCOPES).join(', ')}.`, {
      errors: [{ path: '/surface', message: 'unknown surface' }],
    });
  }
  const engine = input.engine ?? null;
  if (engine !== null && !ENGINE_PATTERN.test(engine)) {
    throw new ProblemError('CC_VALIDATION_FAILED', `engine must be ${ENGINE_RULE}.`, {
      errors: [{ path: '/engine', message: 'not an engine slug' }],
    });
  }
  const tools = prepare(memo, 'tools', input.tools);
  const connectionsSource = connectionsText(input.connections?.services);
  const connections = connectionsSource ? prepare(memo, 'connections', { source: input.connections!.source, text: connectionsSource, brainDerived: true }) : null;
  const capabilities = capabilitiesText(input.capabilities);
  const toolUse = tools !== null || connections !== null || capabilities !== '';
  const system: PreparedBlock[] = [identity];
  const pushSystem = (prepared: PreparedBlock | null) => {
    if (prepared) system.push(prepared);
  };
  pushSystem(prepare(memo, 'runtime-policy', input.runtimePolicy ?? (toolUse ? BUILTIN_RUNTIME_POLICY_TOOL_USE : BUILTIN_RUNTIME_POLICY)));
  pushSystem(prepare(memo, 'blueprint', input.blueprint));
  pushSystem(prepare(memo, 'persona', input.persona));
  pushSystem(prepare(memo, 'hard-rules', input.hardRules));
  pushSystem(tools);
  pushSystem(connections);
  pushSystem(prepare(memo, 'role', input.role));
  if (capabilities) pushSystem(prepare(memo, 'capabilities', { source: 'request:capabilities', text: capabilities }));
  if (input.purpose) {
    const purpose = prepare(memo, 'purpose', input.purpose);
    if (purpose) system.push(purpose);
    else warnings.push(`${input.purpose.source} is empty; no purpose block`);
  }
  pushSystem(prepare(memo, 'runtime-scope', RUNTIME_SCOPE_SOURCES[input.surface]));
  if (input.clock) pushSystem(clockBlock(memo, clockText(input.clock, memo.time), tokenizer));
  return { system, engine };
}
