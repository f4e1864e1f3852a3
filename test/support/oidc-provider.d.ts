// oidc-provider ships no type declarations; the OIDC test uses it as the real identity provider.
declare module 'oidc-provider';
