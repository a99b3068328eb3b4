// A real OpenID Connect provider for the desk's sign-in tests and for trying the
// "Sign in with your identity provider" steps of README.md: `oidc-provider` (npm, a
// certified implementation) on 127.0.0.1, with one client for the desk and three people:
// ann (group "support"), lee (groups "support" and "leads"), nora (no group), uma (group
// "support", her address not verified) and ann2 (group "support", a second identity
// showing ann's address, verified: the desk refuses it once ann is linked). Its
// development login page takes any password. Never for production: keys are generated
// at each start and nothing is stored.
//
//   node server.mjs PORT DESK_URL     e.g. node server.mjs 9400 http://127.0.0.1:8080
import Provider from 'oidc-provider';

const [port, desk] = [process.argv[2] || '9400', (process.argv[3] || 'http://127.0.0.1:8080').replace(/\/$/, '')];
const issuer = `http://127.0.0.1:${port}`;
const people = {
  ann: { email: 'ann@support.example', groups: ['support'] },
  lee: { email: 'lee@support.example', groups: ['support', 'leads'] },
  nora: { email: 'nora@support.example', groups: [] },
  uma: { email: 'uma@support.example', groups: ['support'], unverified: true },
  ann2: { email: 'ann@support.example', groups: ['support'] },
};

const provider = new Provider(issuer, {
  clients: [{
    client_id: 'refund-desk',
    client_secret: 'desk-secret',
    redirect_uris: [`${desk}/console/sso/callback`],
    grant_types: ['authorization_code'],
    response_types: ['code'],
    token_endpoint_auth_method: 'client_secret_basic',
  }],
  claims: { openid: ['sub'], email: ['email', 'email_verified'], profile: ['name', 'groups'] },
  // Scope claims in the ID token itself: the desk reads the person from the ID token.
  conformIdTokenClaims: false,
  pkce: { required: () => true },
  features: { devInteractions: { enabled: true } },
  async findAccount(ctx, id) {
    const person = people[id];
    if (!person) return undefined;
    return {
      accountId: id,
      async claims() {
        return { sub: id, email: person.email, email_verified: !person.unverified, name: id, groups: person.groups };
      },
    };
  },
});
provider.proxy = false;
provider.listen(Number(port), '127.0.0.1', () => {
  console.log(`oidc-provider listening at ${issuer}`);
});
