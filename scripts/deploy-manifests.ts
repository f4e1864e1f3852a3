/**
 * Writes the generated manifests of deploy/kubernetes/base: the TenantClient CRD, from its one
 * definition (domain/tenants/tenant-client-crd.ts), and the NetworkPolicies, from the permitted paths
 * (domain/service-keys/network.ts with the service-key inventory; scripts/network-policies.ts).
 * `npm run deploy:manifests` after a change of either; test/unit/deploy-manifests.test.ts fails while
 * a file is not current.
 */
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { networkPoliciesManifest } from './network-policies.js';
import { tenantClientCrdYaml } from './tenant-client-crd.js';

export const deployDir = path.resolve(import.meta.dirname, '../deploy/kubernetes/base');
export const CRD_MANIFEST = 'tenantclient-crd.yaml';
export const NETWORK_POLICIES_MANIFEST = 'network-policies.yaml';

/** The CRD manifest's text: a header naming its source, then the CRD as YAML. */
export const crdManifest = () =>
  `# Generated from domain/tenants/tenant-client-crd.ts by \`npm run deploy:manifests\`: do not edit.\n${tenantClientCrdYaml()}`;

/** Each generated file of deploy/kubernetes/base with its text. */
export const generatedManifests = (): Record<string, string> => ({
  [CRD_MANIFEST]: crdManifest(),
  [NETWORK_POLICIES_MANIFEST]: networkPoliciesManifest(),
});

if (import.meta.url === `file://${process.argv[1]}`) {
  for (const [file, text] of Object.entries(generatedManifests())) {
    writeFileSync(path.join(deployDir, file), text);
    console.log(`wrote ${path.join(deployDir, file)}`);
  }
}
