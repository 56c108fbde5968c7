import { readFile } from 'node:fs/promises';
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import { parse } from 'yaml';
import { OPENAPI_PATH } from '../../routes/meta.js';

type Json = Record<string, unknown>;

export interface OpenapiDocument {
  paths: Record<string, Record<string, Json>>;
  components: { schemas: Record<string, unknown>; responses?: Record<string, Json> };
}

export async function readOpenapi(): Promise<OpenapiDocument> {
  return parse(await readFile(OPENAPI_PATH, 'utf8')) as OpenapiDocument;
}

/**
 * Validates answers against the committed openapi.yaml: the schema documented for an
 * operation, status and media type, compiled with Ajv (OpenAPI 3.1 schemas are JSON Schema
 * 2020-12), strict about the schemas themselves.
 */
export function openapiValidator(document: OpenapiDocument) {
  // `$defs` is where a schema keeps its named parts; component refs point there.
  const defs = JSON.parse(JSON.stringify(document.components.schemas).replaceAll('#/components/schemas/', '#/$defs/')) as Json;
  const ajv = new Ajv2020({ strict: true, strictRequired: false, allowUnionTypes: true });
  addFormats.default(ajv);
  ajv.addSchema({ $id: 'openapi', $defs: defs });
  const compiled = new Map<string, ValidateFunction>();

  /** The documented response for an operation and status, following a `$ref` to `components/responses`. */
  function response(method: string, path: string, status: number): Json | undefined {
    const operation = document.paths[path]?.[method.toLowerCase()];
    if (!operation) throw new Error(`no operation ${method} ${path} in openapi.yaml`);
    const answer = (operation['responses'] as Record<string, Json>)[String(status)];
    if (answer === undefined) return undefined;
    const ref = answer['$ref'];
    return typeof ref === 'string' ? document.components.responses![ref.split('/').pop()!] : answer;
  }

  return {
    response,
    /** Errors of `body` against the documented schema (null when valid); throws when nothing is documented for it. */
    errors(method: string, path: string, status: number, contentType: string, body: unknown): string | null {
      const answer = response(method, path, status);
      if (answer === undefined) throw new Error(`${method} ${path} documents no ${status}`);
      const media = contentType.split(';')[0]!.trim();
      const content = answer['content'] as Record<string, { schema: unknown }> | undefined;
      if (content === undefined) return body === '' || body === undefined ? null : `${status} documents no body`;
      const schema = content[media]?.schema;
      if (schema === undefined) throw new Error(`${method} ${path} ${status} documents no ${media} body`);
      const key = `${method} ${path} ${status} ${media}`;
      let validate = compiled.get(key);
      if (!validate) {
        const rewritten = JSON.parse(JSON.stringify(schema).replaceAll('#/components/schemas/', 'openapi#/$defs/')) as Json;
        compiled.set(key, (validate = ajv.compile(rewritten)));
      }
      return validate(body) ? null : ajv.errorsText(validate.errors);
    },
  };
}
