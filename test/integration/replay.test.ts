/**
 * Determinism guard: the current workflow code must replay the recorded histories
 * (test/fixtures/histories/<workflow>.json, as fetched with `handle.fetchHistory()` by the tests
 * that write them with RECORD_HISTORIES=1). A change that would break running executions fails
 * here; version it with `patched()` (docs/developers.md, "Workflow replay fixtures").
 */
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { Worker } from '@temporalio/worker';
import { temporal } from '@temporalio/proto';
import { workflowBundle } from '../support/env.js';
import { workflowSpanSinks } from '../../worker/tracing.js';

const dir = path.resolve(import.meta.dirname, '../fixtures/histories');
const fixtures = readdirSync(dir).filter((f) => f.endsWith('.json'));

describe('workflow replay', () => {
  it('has recorded histories to replay', () => expect(fixtures.length).toBeGreaterThan(0));

  it.each(fixtures)('replays %s with the current code', async (file) => {
    const history = temporal.api.history.v1.History.fromObject(JSON.parse(readFileSync(path.join(dir, file), 'utf8')));
    await expect(
      Worker.runReplayHistory({ workflowBundle: workflowBundle(), sinks: workflowSpanSinks() }, history),
    ).resolves.toBeUndefined();
  });
});
