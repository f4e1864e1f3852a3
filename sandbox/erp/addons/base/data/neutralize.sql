-- The stand-in's `base` module: Odoo 18's base/data/neutralize.sql on the tables the stand-in has
-- (no mail servers or scheduled actions; ir_config_parameter without Odoo's unique key constraint).

-- neutralization flag for the database
WITH updated AS (
    UPDATE ir_config_parameter
       SET value = 'true'
     WHERE key = 'database.is_neutralized'
 RETURNING 1
)
INSERT INTO ir_config_parameter (key, value)
SELECT 'database.is_neutralized', 'true'
 WHERE NOT EXISTS (SELECT 1 FROM updated);

-- deactivate webhooks
UPDATE ir_act_server
   SET webhook_url = 'neutralization - disable webhook'
 WHERE state = 'webhook';
