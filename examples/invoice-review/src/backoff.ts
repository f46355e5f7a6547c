// Backoff beyond the SDK's own retries (connect's maxRetries): a call the
// runtime still answers 429 is run again after Retry-After when the runtime
// sent one, else after a wait that doubles from one second.
import { AppRuntimeError } from "@appruntime/sdk";

/** How withBackoff waits: sleep(ms), told first through onWait(ms). */
export type Waiting = { sleep?: (ms: number) => Promise<void>; onWait?: (ms: number) => void };

const realSleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** Runs call, again while it fails with 429, up to attempts tries in all. */
export async function withBackoff<T>(call: () => Promise<T>, attempts = 4, { sleep = realSleep, onWait }: Waiting = {}): Promise<T> {
  let wait = 1000;
  for (let i = 1; ; i++) {
    try {
      return await call();
    } catch (err) {
      if (!(err instanceof AppRuntimeError) || err.status !== 429 || i >= attempts) throw err;
      const ms = err.retryAfter !== undefined ? err.retryAfter * 1000 : wait;
      onWait?.(ms);
      await sleep(ms);
      wait *= 2;
    }
  }
}
