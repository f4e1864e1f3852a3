/** The banking request and answer shapes (TypeBox), shared by the banking service and the account API routes. */
import { Type } from 'typebox';

export const IsoDate = Type.String({ format: 'date', description: 'ISODate, YYYY-MM-DD' });
const AccountRef = Type.Object(
  { iban: Type.String({ pattern: '^[A-Z]{2}[0-9]{2}[A-Z0-9]{1,30}$' }) },
  { additionalProperties: false },
);
export const ConsentAccess = Type.Object(
  {
    accounts: Type.Optional(Type.Array(AccountRef, { maxItems: 20 })),
    balances: Type.Optional(Type.Array(AccountRef, { maxItems: 20 })),
    transactions: Type.Optional(Type.Array(AccountRef, { maxItems: 20 })),
    availableAccounts: Type.Optional(Type.Literal('allAccounts')),
    allPsd2: Type.Optional(Type.Literal('allAccounts')),
  },
  {
    additionalProperties: false,
    minProperties: 1,
    description: 'NextGenPSD2 access; default { allPsd2: "allAccounts" }',
  },
);
export const ConsentBody = Type.Object(
  {
    access: Type.Optional(ConsentAccess),
    recurringIndicator: Type.Optional(Type.Boolean({ default: true })),
    validUntil: Type.Optional(IsoDate),
    frequencyPerDay: Type.Optional(Type.Integer({ minimum: 1, maximum: 100 })),
    redirectUrl: Type.Optional(
      Type.String({ format: 'uri', maxLength: 2000, description: 'Where the bank sends the PSU after SCA' }),
    ),
  },
  { additionalProperties: false },
);
export const ConsentSchema = Type.Object({
  consentId: Type.String({ format: 'uuid' }),
  bankId: Type.String(),
  status: Type.Union([
    Type.Literal('received'),
    Type.Literal('valid'),
    Type.Literal('rejected'),
    Type.Literal('revokedByPsu'),
    Type.Literal('expired'),
    Type.Literal('terminatedByTpp'),
  ]),
  access: Type.Record(Type.String(), Type.Unknown()),
  recurringIndicator: Type.Boolean(),
  validUntil: Type.String(),
  frequencyPerDay: Type.Integer(),
  scaRedirect: Type.Union([Type.String(), Type.Null()], {
    description: 'The bank page where the PSU completes SCA (while status is received)',
  }),
  createdAt: Type.String({ format: 'date-time' }),
});
export const AdaptersSchema = Type.Object({
  adapters: Type.Array(Type.Object({ id: Type.String(), name: Type.String(), protocol: Type.String() })),
});
export const BankIdParam = Type.String({ pattern: '^[a-z0-9-]{1,40}$' });
export const AccountIdParam = Type.String({ pattern: '^[A-Za-z0-9._-]{1,100}$' });
export const TransactionsQuery = Type.Object(
  {
    consentId: Type.Optional(Type.String({ format: 'uuid' })),
    bookingStatus: Type.Optional(
      Type.Union([Type.Literal('booked'), Type.Literal('pending'), Type.Literal('both')], { default: 'booked' }),
    ),
    dateFrom: Type.Optional(IsoDate),
    dateTo: Type.Optional(IsoDate),
  },
  { additionalProperties: false },
);
export const ConsentQuery = Type.Object(
  { consentId: Type.Optional(Type.String({ format: 'uuid' })) },
  { additionalProperties: false },
);
