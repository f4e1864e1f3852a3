/**
 * Replay fixtures: with RECORD_HISTORIES=1 a test writes the history of the run it drove to
 * test/fixtures/histories/<name>.json, where replay.test.ts keeps the workflow code honest against
 * it (docs/developers.md, "Workflow replay fixtures").
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { WorkflowHandle } from '@temporalio/client';

const fixtures = path.resolve(import.meta.dirname, '../fixtures/histories');

/** Writes the handle's history as fixture `name` when RECORD_HISTORIES is set; does nothing otherwise. */
export async function recordHistory(handle: Pick<WorkflowHandle, 'fetchHistory'>, name: string): Promise<void> {
  if (!process.env.RECORD_HISTORIES) return;
  const history = await handle.fetchHistory();
  mkdirSync(fixtures, { recursive: true });
  writeFileSync(path.join(fixtures, `${name}.json`), JSON.stringify(history, null, 2) + '\n');
}
