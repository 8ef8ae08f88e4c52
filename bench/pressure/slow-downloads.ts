/**
 * Slow downloads: 20 Download Model requests of a 16 MB model at once whose bodies are never read;
 * one that ends is opened again. Before downloads read the large object a chunk per short query,
 * each held a pool connection in a read transaction until its client read the last byte.
 */
import { request as httpRequest, type ClientRequest } from 'node:http';
import { identityModel } from '../../test/helpers/onnx-models.ts';
import type { PressureContext, PressureScenario } from './scenario.ts';
import { aborted, modelRevisions, uploadReady } from './models.ts';

const DOWNLOADS = 20;
const MODEL_BYTES = 16 * 1024 * 1024;

let revision = '';

export const scenario: PressureScenario = {
  name: `${DOWNLOADS} downloads of a ${MODEL_BYTES / 1024 / 1024} MB model never read`,
  async prepare(ctx: PressureContext) {
    [revision] = await modelRevisions(ctx.system, ctx.hostile, 1);
    await uploadReady(ctx.system, ctx.hostile, revision, identityModel(MODEL_BYTES));
  },
  async run(ctx: PressureContext, signal: AbortSignal) {
    const url = new URL(ctx.system.apiUrl);
    const open = new Set<ClientRequest>();
    let reopened = 0;
    const start = () => {
      if (signal.aborted) return;
      const req = httpRequest({
        host: url.hostname,
        port: url.port,
        path: `/v1/revisions/${revision}/model`,
        headers: { authorization: `Bearer ${ctx.hostile.token}` },
      });
      let ended = false;
      const end = () => {
        if (ended) return;
        ended = true;
        open.delete(req);
        if (!signal.aborted) {
          reopened++;
          start();
        }
      };
      // Headers in, body never read.
      req.on('response', (res) => {
        res.pause();
        res.on('close', end);
      });
      req.on('error', end);
      req.on('close', end);
      req.end();
      open.add(req);
    };
    for (let i = 0; i < DOWNLOADS; i++) start();
    await aborted(signal);
    for (const req of open) req.destroy();
    ctx.log(`slow downloads: ${reopened} ended and opened again`);
  },
};
