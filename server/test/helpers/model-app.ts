import { afterAll, beforeAll } from 'vitest';
import { startFakeModel } from './fake-model.ts';
import { startTestApp, type TestApp } from './test-app.ts';

export type FakeModel = Awaited<ReturnType<typeof startFakeModel>>;

/**
 * A test app whose model provider is a loopback fake, for the whole file: started before its tests,
 * closed after them. `use` receives both once they run; `env` may be a function, read when the app starts.
 */
export function useAppWithModel(
  env: Parameters<typeof startTestApp>[0] | (() => Parameters<typeof startTestApp>[0]),
  use: (started: { app: TestApp; model: FakeModel }) => void,
): void {
  let started: { app: TestApp; model: FakeModel } | undefined;
  beforeAll(async () => {
    const model = await startFakeModel();
    started = { model, app: await startTestApp({ ...model.env, ...(typeof env === 'function' ? env() : env) }) };
    use(started);
  });
  afterAll(async () => {
    await started?.app.close();
    await started?.model.close();
  });
}
