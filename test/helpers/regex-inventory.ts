import { readdir, readFile } from 'node:fs/promises';
import { join, relative } from 'node:path';
import ts from 'typescript';
import { PROJECT_ROOT } from '../../src/config.js';

/** One regular expression found in the source: where it is and what it is (or the code that builds it, when only running it can tell). */
export interface FoundRegex {
  /** `src/core/pii.ts:34`. */
  at: string;
  file: string;
  kind: 'literal' | 'constructor' | 'string-pattern';
  /** The pattern and flags, when the source states them (a literal, or a constructor over constant strings). */
  source?: string;
  flags?: string;
  /** The constructor's arguments as written, when they are not constant: the key of a dynamic row. */
  expression?: string;
}

/** The folders whose regular expressions see brain or caller text. */
export const SCANNED_FOLDERS = ['src', 'schemas', 'routes'] as const;

async function typescriptFiles(folder: string): Promise<string[]> {
  const entries = await readdir(join(PROJECT_ROOT, folder), { withFileTypes: true, recursive: true });
  return entries
    .filter((entry) => entry.isFile() && entry.name.endsWith('.ts') && !entry.name.endsWith('.d.ts'))
    .map((entry) => relative(PROJECT_ROOT, join(entry.parentPath, entry.name)))
    .sort();
}

/** Top-level and block-level `const NAME = <initializer>` of a file, for evaluating constant pattern strings. */
function constInitializers(file: ts.SourceFile): Map<string, ts.Expression> {
  const found = new Map<string, ts.Expression>();
  const visit = (node: ts.Node) => {
    if (ts.isVariableDeclarationList(node) && (node.flags & ts.NodeFlags.Const) !== 0) {
      for (const declaration of node.declarations) {
        if (ts.isIdentifier(declaration.name) && declaration.initializer) found.set(declaration.name.text, declaration.initializer);
      }
    }
    ts.forEachChild(node, visit);
  };
  visit(file);
  return found;
}

/** The string a constant expression evaluates to (literals, templates, `+`, parentheses and const names), else undefined. */
function constantString(node: ts.Expression, consts: Map<string, ts.Expression>, depth = 0): string | undefined {
  if (depth > 32) return undefined;
  if (ts.isStringLiteral(node) || ts.isNoSubstitutionTemplateLiteral(node)) return node.text;
  if (ts.isParenthesizedExpression(node)) return constantString(node.expression, consts, depth + 1);
  if (ts.isIdentifier(node)) {
    const initializer = consts.get(node.text);
    return initializer === undefined ? undefined : constantString(initializer, consts, depth + 1);
  }
  if (ts.isBinaryExpression(node) && node.operatorToken.kind === ts.SyntaxKind.PlusToken) {
    const left = constantString(node.left, consts, depth + 1);
    const right = constantString(node.right, consts, depth + 1);
    return left === undefined || right === undefined ? undefined : left + right;
  }
  if (ts.isTemplateExpression(node)) {
    let out = node.head.text;
    for (const span of node.templateSpans) {
      const value = constantString(span.expression, consts, depth + 1);
      if (value === undefined) return undefined;
      out += value + span.literal.text;
    }
    return out;
  }
  return undefined;
}

const STRING_PATTERN_METHODS = new Set(['match', 'matchAll', 'search']);

/**
 * Every regular expression in one file: each literal, each `new RegExp(...)` / `RegExp(...)`
 * (evaluated when its arguments are constant strings), and each string passed to `match`,
 * `matchAll` or `search` (which JavaScript turns into a pattern).
 */
export function regexesOf(path: string, text: string): FoundRegex[] {
  const file = ts.createSourceFile(path, text, ts.ScriptTarget.Latest, true, ts.ScriptKind.TS);
  const consts = constInitializers(file);
  const found: FoundRegex[] = [];
  const at = (node: ts.Node) => `${path}:${file.getLineAndCharacterOfPosition(node.getStart(file)).line + 1}`;
  const visit = (node: ts.Node) => {
    if (node.kind === ts.SyntaxKind.RegularExpressionLiteral) {
      const literal = node.getText(file);
      const end = literal.lastIndexOf('/');
      found.push({ at: at(node), file: path, kind: 'literal', source: literal.slice(1, end), flags: literal.slice(end + 1) });
    } else if ((ts.isNewExpression(node) || ts.isCallExpression(node)) && ts.isIdentifier(node.expression) && node.expression.text === 'RegExp') {
      const [pattern, flags] = node.arguments ?? [];
      const source = pattern === undefined ? '' : constantString(pattern, consts);
      const flagText = flags === undefined ? '' : constantString(flags, consts);
      if (source !== undefined && flagText !== undefined) found.push({ at: at(node), file: path, kind: 'constructor', source, flags: flagText });
      else found.push({ at: at(node), file: path, kind: 'constructor', expression: (node.arguments ?? []).map((arg) => arg.getText(file)).join(', ') });
    } else if (
      ts.isCallExpression(node) &&
      ts.isPropertyAccessExpression(node.expression) &&
      STRING_PATTERN_METHODS.has(node.expression.name.text) &&
      node.arguments.length > 0 &&
      (ts.isStringLiteral(node.arguments[0]!) || ts.isNoSubstitutionTemplateLiteral(node.arguments[0]!) || ts.isTemplateExpression(node.arguments[0]!))
    ) {
      const source = constantString(node.arguments[0]!, consts);
      found.push(source === undefined ? { at: at(node), file: path, kind: 'string-pattern', expression: node.arguments[0]!.getText(file) } : { at: at(node), file: path, kind: 'string-pattern', source, flags: '' });
    }
    ts.forEachChild(node, visit);
  };
  visit(file);
  return found;
}

/** Every regular expression in `SCANNED_FOLDERS`, file by file in path order. */
export async function regexInventory(): Promise<FoundRegex[]> {
  const found: FoundRegex[] = [];
  for (const folder of SCANNED_FOLDERS) {
    for (const path of await typescriptFiles(folder)) found.push(...regexesOf(path, await readFile(join(PROJECT_ROOT, path), 'utf8')));
  }
  return found;
}
