// oidc-provider ships no type declarations: the auth service types the part it uses
// (oidc-provider.ts, OidcProvider); the OIDC login test uses it as an external identity provider.
declare module 'oidc-provider';
