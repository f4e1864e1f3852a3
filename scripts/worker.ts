/**
 * The development worker process (`npm run start:worker`, and the tests that need a worker process
 * of their own): worker/index.ts's process, with ERP_BACKEND=standin the ERP stand-in's from-scratch
 * installer and its addons path (ERP_ADDONS_PATH, unless set); otherwise real Odoo's installer.
 */
import { config as loadConfig } from '../lib/config.js';
import { runWorkerProcess } from '../worker/index.js';
import { STAND_IN_ADDONS_PATH } from '../sandbox/erp/install.js';
import { developmentErpInstaller } from './erp-stand-in.js';

const config = loadConfig();
const addons =
  config.ERP_BACKEND === 'standin' ? (config.ERP_ADDONS_PATH ?? STAND_IN_ADDONS_PATH) : config.ERP_ADDONS_PATH;
await runWorkerProcess({ ...config, ERP_ADDONS_PATH: addons }, developmentErpInstaller(config));
