import closeWithGrace from 'close-with-grace';
import { buildApp, createLogger } from './app.js';
import { ConfigError, loadConfig, type Config } from './config.js';

/** The only place that listens. Config is read once; a bad value stops the process. */
export async function main(env: Record<string, string | undefined> = process.env): Promise<void> {
  let config: Config;
  try {
    config = loadConfig(env);
  } catch (error) {
    if (error instanceof ConfigError) {
      process.stderr.write(`context-compiler: ${error.message}\n`);
      process.exit(78); // EX_CONFIG
    }
    throw error;
  }

  const log = createLogger(config);
  const app = await buildApp(config, { logger: log });

  closeWithGrace({ delay: config.shutdownGraceMs, logger: log }, async ({ signal, err }) => {
    if (err) log.error({ err }, 'shutting down after an uncaught error');
    else log.info({ signal }, 'shutting down');
    await app.close();
  });

  try {
    await app.listen({ port: config.port, host: config.host });
  } catch (error) {
    log.fatal({ err: error }, 'could not listen');
    process.exit(1);
  }
}

await main();
