/**
 * Writes the generated manifest of deploy/kubernetes: the TenantClient CRD, from its one definition
 * (domain/tenants/tenant-client-crd.ts). `npm run deploy:manifests` after a change of the CRD;
 * test/unit/deploy-manifests.test.ts fails while the file is not current.
 */
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { tenantClientCrdYaml } from './tenant-client-crd.js';

export const deployDir = path.resolve(import.meta.dirname, '../deploy/kubernetes');
export const CRD_MANIFEST = 'tenantclient-crd.yaml';

/** The CRD manifest's text: a header naming its source, then the CRD as YAML. */
export const crdManifest = () =>
  `# Generated from domain/tenants/tenant-client-crd.ts by \`npm run deploy:manifests\`: do not edit.\n${tenantClientCrdYaml()}`;

if (import.meta.url === `file://${process.argv[1]}`) {
  writeFileSync(path.join(deployDir, CRD_MANIFEST), crdManifest());
  console.log(`wrote ${path.join(deployDir, CRD_MANIFEST)}`);
}
