/**
 * The development worker process (`npm run start:worker`, and the tests that need a worker process
 * of their own): worker/index.ts's process, with ERP_BACKEND=standin the ERP stand-in's from-scratch
 * installer and its addons path (ERP_ADDONS_PATH, unless set); otherwise real Odoo's installer.
 */
import { config as loadConfig } from '../lib/config.js';
import { runWorkerProcess } from '../worker/index.js';
import { erpInstallerFor } from '../worker/erp-installer.js';
import { STAND_IN_ADDONS_PATH } from '../sandbox/erp/install.js';
import { standInErpInstaller } from './erp-stand-in.js';

const config = loadConfig();
if (config.ERP_BACKEND === 'standin')
  await runWorkerProcess(
    { ...config, ERP_ADDONS_PATH: config.ERP_ADDONS_PATH ?? STAND_IN_ADDONS_PATH },
    standInErpInstaller(config),
  );
else await runWorkerProcess(config, erpInstallerFor(config));
