// withBackoff's waits, run by scripts/example-check (esbuild bundles it for
// Node): Retry-After first, else a doubling wait; other errors and the last
// 429 go through.
import { AppRuntimeError } from "@appruntime/sdk";
import { withBackoff } from "../src/backoff.js";

// A small assert: the project has no Node type declarations to type node:assert.
function check(ok: boolean, what: string): void { if (!ok) throw new Error("backoff.test: " + what); }
async function failure(p: Promise<unknown>): Promise<unknown> { try { await p; } catch (e) { return e; } throw new Error("backoff.test: no failure"); }

const busy = (retryAfter?: number) => new AppRuntimeError(429, "busy", retryAfter === undefined ? {} : { retryAfter });

const waits: number[] = [];
const sleep = async (ms: number) => { waits.push(ms); };
let calls = 0;
const replies = [busy(3), busy(), busy()];
const got = await withBackoff(async () => { calls++; const e = replies.shift(); if (e) throw e; return "ok"; }, 4, { sleep });
check(got === "ok" && calls === 4, `ok after 4 calls, got ${got} after ${calls}`);
check(waits.join() === "3000,2000,4000", `Retry-After, then the doubling wait: ${waits}`);

waits.length = 0; calls = 0;
let e = await failure(withBackoff(async () => { calls++; throw busy(); }, 2, { sleep }));
check(e instanceof AppRuntimeError && e.status === 429 && calls === 2, `the last 429 after at most attempts tries (${calls})`);

calls = 0;
e = await failure(withBackoff(async () => { calls++; throw new AppRuntimeError(409, "settled"); }, 4, { sleep }));
check(e instanceof AppRuntimeError && e.status === 409 && calls === 1, `only a 429 is retried (${calls} calls)`);
console.log("backoff.test: ok");
