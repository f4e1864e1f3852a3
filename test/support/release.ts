/**
 * The release of deploy/kubernetes as an operator installs it: an overlay rendered by
 * `kubectl kustomize` (what `kubectl apply -k` applies), as text and as objects.
 */
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { parseAllDocuments } from 'yaml';
import { findKubeBinary } from '../../scripts/local-kubernetes.js';

export const releaseDir = path.resolve(import.meta.dirname, '../../deploy/kubernetes');
export const OVERLAYS = ['production', 'dev'] as const;
export type Overlay = (typeof OVERLAYS)[number];

export interface ReleaseObject {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; labels?: Record<string, string>; uid?: string };
  spec?: Record<string, unknown>;
  data?: Record<string, string>;
}

/** `kubectl kustomize deploy/kubernetes/overlays/<overlay>`: the release's manifests as one YAML stream. */
export const renderRelease = (overlay: Overlay | string): string =>
  execFileSync(findKubeBinary('kubectl'), ['kustomize', path.join(releaseDir, 'overlays', overlay)], {
    encoding: 'utf8',
    maxBuffer: 64 * 1024 * 1024,
  });

/** The objects of the rendered release. */
export const releaseObjects = (overlay: Overlay | string): ReleaseObject[] =>
  parseAllDocuments(renderRelease(overlay)).map((d) => d.toJS() as ReleaseObject);
