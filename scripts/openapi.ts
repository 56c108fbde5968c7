/**
 * `npm run openapi`: writes openapi.yaml from the route schemas, as the app generates it
 * (`GET /openapi.json` serves the same document). `--check` writes nothing and exits 1 when
 * the committed file differs; test/routes/openapi-contract.test.ts fails on any difference.
 */
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildApp } from '../src/app.js';
import { loadConfig } from '../src/config.js';
import { openapiYaml } from '../src/http/openapi.js';
import { OPENAPI_PATH } from '../routes/meta.js';

const dir = await mkdtemp(join(tmpdir(), 'cc-openapi-'));
try {
  const app = await buildApp(loadConfig({ LOG_LEVEL: 'silent', TRACE_DIR: join(dir, 'traces') }), { warmUp: false });
  await app.ready();
  const generated = openapiYaml(app);
  await app.close();
  if (process.argv.includes('--check')) {
    const committed = await readFile(OPENAPI_PATH, 'utf8').catch(() => '');
    if (committed !== generated) {
      process.stderr.write('openapi.yaml differs from what the route schemas generate: run `npm run openapi`\n');
      process.exitCode = 1;
    }
  } else {
    await writeFile(OPENAPI_PATH, generated);
    process.stdout.write(`wrote ${OPENAPI_PATH}\n`);
  }
} finally {
  await rm(dir, { recursive: true, force: true });
}
