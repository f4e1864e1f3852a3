/**
 * Real Odoo's own install (`odoo-bin -i <modules>`), run from ODOO_SRC with the cached venv
 * (scripts/odoo-setup.sh): it initialises a database and installs the modules with their demo
 * data; then `odoo-bin shell` sets the admin's password (hashed by Odoo) and adds a second company
 * in EUR with the generic chart of accounts. The template build (scripts/odoo-templates.ts) and the
 * from-scratch install of a tenant database (from-scratch.ts) run these same steps. Odoo logs
 * `Loading module <name> (<i>/<n>)` as it loads each module: that is the install's progress.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { tierModuleNames } from '../billing/tiers.js';
import { erpVersions, type ErpVersion, type Tier } from '../tenants/types.js';
import { InstallerUnavailableError, type ErpInstaller, type InstallProgress } from './from-scratch.js';

export interface OdooRuntime {
  /** Folder holding odoo-bin. */
  src: string;
  /** The ERP version this source is (odooSourceVersion). */
  version: ErpVersion;
  /** The venv's python (scripts/odoo-setup.sh). */
  python: string;
  /** Odoo's data dir: sessions and `filestore/<database>`. */
  dataDir: string;
}

/** The ERP version an Odoo source is: the major of `version_info` in its odoo/release.py, one the platform runs. */
export function odooSourceVersion(src: string): ErpVersion {
  let release: string;
  try {
    release = readFileSync(path.join(src, 'odoo', 'release.py'), 'utf8');
  } catch {
    throw new Error(`${src} holds no odoo/release.py: not an Odoo source folder`);
  }
  const major = /^version_info = \((\d+),/m.exec(release)?.[1];
  const version = erpVersions.find((v) => v === major);
  if (!version)
    throw new Error(`${src} is Odoo ${major ?? '(unknown)'}: the platform runs Odoo ${erpVersions.join(', ')}`);
  return version;
}

/**
 * Odoo's `--addons-path` for a source folder (relative to it, odoo-bin's working directory): a git
 * checkout has `addons` and `odoo/addons`, a release archive (Odoo's nightly sdist) all in `odoo/addons`.
 */
export const odooAddonsPathArg = (src: string) =>
  `--addons-path=${['addons', 'odoo/addons'].filter((dir) => existsSync(path.join(src, dir))).join(',')}`;

/** The venv python scripts/odoo-setup.sh makes for an Odoo version (~/.cache/plana/odoo-venv-<version>). */
export const odooVenvPython = (version: ErpVersion) =>
  path.join(os.homedir(), '.cache', 'plana', `odoo-venv-${version}`, 'bin', 'python');

/** The comment of a template built by Odoo of this version (a stand-in template of the same name has another). */
export const odooTemplateMark = (version: ErpVersion) =>
  JSON.stringify({ plana: 'odoo-template', odoo: `${version}.0`, layout: 5 }); // 3: base_automation (event rules), 4: auth_oidc, 5: the EUR company's currency kept after its chart

/**
 * OCA's auth_oidc (installed into the venv by scripts/odoo-setup.sh): the ERP signs in through the
 * platform's OpenID provider with it (domain/identity/erp-sign-in.ts). Every tier's database has it.
 */
export const ODOO_SIGN_IN_MODULE = 'auth_oidc';

/** What a tier's database is installed with (`odoo-bin -i`): the tier's modules and the sign-in module. */
export const erpInstallModules = (tier: Tier): string[] => [...tierModuleNames(tier), ODOO_SIGN_IN_MODULE];

/** Python run by `odoo-bin shell` on a new database (Odoo's ORM, committed at the end). */
const ODOO_SETUP_SHELL = (adminPassword: string) => `
admin = env.ref('base.user_admin')
admin.password = ${JSON.stringify(adminPassword)}
eur = env.ref('base.EUR')
eur.active = True
europe = env['res.company'].create({'name': 'Plana Demo Europe', 'currency_id': eur.id})
admin.write({'company_ids': [(4, europe.id)]})
env['account.chart.template'].try_loading('generic_coa', company=europe, install_demo=False)
# loading the chart gives a company without entries its fiscal country's currency (generic_coa: the US) on 19
europe.currency_id = eur
env.cr.commit()
`;

/** odoo-bin's database options for a PostgreSQL URL. */
export function odooDbArgs(databaseUrl: string): string[] {
  const url = new URL(databaseUrl);
  return [
    `--db_host=${url.hostname}`,
    `--db_port=${url.port || '5432'}`,
    `--db_user=${decodeURIComponent(url.username)}`,
    `--db_password=${decodeURIComponent(url.password)}`,
  ];
}

const LOADING_MODULE = /Loading module (\S+) \((\d+)\/(\d+)\)/;

/** Runs odoo-bin; each `Loading module` line it logs goes to `onProgress`. */
export function runOdooBin(
  rt: OdooRuntime,
  args: string[],
  opts: { input?: string; signal?: AbortSignal; onProgress?: (progress: InstallProgress) => void } = {},
): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(rt.python, [path.join(rt.src, 'odoo-bin'), ...args], {
      cwd: rt.src,
      stdio: ['pipe', 'ignore', 'pipe'],
      signal: opts.signal,
    });
    let tail = '';
    child.stderr.on('data', (c: Buffer) => {
      const text = c.toString();
      tail = (tail + text).slice(-4_000);
      for (const line of text.split('\n')) {
        const m = LOADING_MODULE.exec(line);
        if (m) opts.onProgress?.({ module: m[1]!, index: Number(m[2]), total: Number(m[3]) });
      }
    });
    child.stdin.end(opts.input ?? '');
    child.on('error', reject);
    child.on('exit', (code) =>
      code === 0 ? resolve() : reject(new Error(`odoo-bin ${args[0]} exited with ${code}: ${tail}`)),
    );
  });
}

/** `odoo-bin -i` with the tier's modules and auth_oidc into the new `database`, then the admin's password and the EUR company. */
export async function installOdooDatabase(
  rt: OdooRuntime,
  opts: {
    erpDatabaseUrl: string;
    database: string;
    tier: Tier;
    adminPassword: string;
    onProgress?: (progress: InstallProgress) => void;
    signal?: AbortSignal;
  },
): Promise<void> {
  mkdirSync(rt.dataDir, { recursive: true });
  const common = [
    odooAddonsPathArg(rt.src),
    `--data-dir=${rt.dataDir}`,
    ...odooDbArgs(opts.erpDatabaseUrl),
    '-d',
    opts.database,
    '--log-level=warn',
  ];
  await runOdooBin(
    rt,
    [
      ...common,
      '--log-handler=odoo.modules.loading:INFO',
      '-i',
      erpInstallModules(opts.tier).join(','),
      // Odoo 19 installs without demo data unless asked (17 and 18 load it unless --without-demo)
      ...(Number(rt.version) >= 19 ? ['--with-demo'] : []),
      '--stop-after-init',
    ],
    { signal: opts.signal, onProgress: opts.onProgress },
  );
  await runOdooBin(rt, ['shell', ...common, '--no-http'], {
    input: ODOO_SETUP_SHELL(opts.adminPassword),
    signal: opts.signal,
  });
}

/** The from-scratch installer of a real Odoo (ERP_BACKEND=odoo): the version its source is, only. */
export function odooInstaller(rt: OdooRuntime, opts: { erpDatabaseUrl: string; adminPassword: string }): ErpInstaller {
  return {
    filestoreRoot: path.join(rt.dataDir, 'filestore'),
    templateMark: odooTemplateMark,
    async install({ database, tier, version, onProgress, signal }) {
      if (version !== rt.version)
        throw new InstallerUnavailableError(
          `this Odoo (ODOO_SRC=${rt.src}) is ${rt.version}: it cannot install an ERP ${version} database`,
        );
      await installOdooDatabase(rt, { ...opts, database, tier, onProgress, signal });
    },
  };
}
