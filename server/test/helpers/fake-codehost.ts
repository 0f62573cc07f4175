import { createHash, randomBytes } from 'node:crypto';
import { sendJson, startLoopbackServer } from './http.ts';

export interface CodehostAccount {
  id: number;
  login: string;
  name: string | null;
  email: string | null;
  emails: Array<{ email: string; primary: boolean; verified: boolean }>;
}

/**
 * Plays `codehost` (GitHub) on loopback: /login/oauth/authorize redirects straight back with a
 * code, /login/oauth/access_token checks client credentials, redirect URI and PKCE, and the REST
 * API answers /user and /user/emails for the token it issued.
 */
export async function startFakeCodehost(options: { clientId: string; clientSecret: string }) {
  let account: CodehostAccount = { id: 1, login: 'octo', name: 'Octo Cat', email: null, emails: [] };
  const codes = new Map<string, { redirectUri: string; challenge: string | null; account: CodehostAccount }>();
  const tokens = new Map<string, CodehostAccount>();

  const server = await startLoopbackServer((request, response, body) => {
    const url = new URL(request.url!, 'http://codehost');
    if (url.pathname === '/login/oauth/authorize') {
      if (url.searchParams.get('client_id') !== options.clientId) return sendJson(response, 400, { error: 'unknown client' });
      const code = randomBytes(10).toString('hex');
      const redirectUri = url.searchParams.get('redirect_uri')!;
      codes.set(code, { redirectUri, challenge: url.searchParams.get('code_challenge'), account });
      const back = new URL(redirectUri);
      back.searchParams.set('code', code);
      back.searchParams.set('state', url.searchParams.get('state') ?? '');
      response.writeHead(302, { location: back.href });
      return response.end();
    }
    if (url.pathname === '/login/oauth/access_token' && request.method === 'POST') {
      const form = new URLSearchParams(body);
      const basic = request.headers.authorization?.startsWith('Basic ')
        ? Buffer.from(request.headers.authorization.slice(6), 'base64').toString().split(':').map(decodeURIComponent)
        : [form.get('client_id'), form.get('client_secret')];
      if (basic[0] !== options.clientId || basic[1] !== options.clientSecret)
        return sendJson(response, 200, { error: 'incorrect_client_credentials' });
      const grant = codes.get(form.get('code') ?? '');
      codes.delete(form.get('code') ?? '');
      if (!grant || grant.redirectUri !== form.get('redirect_uri'))
        return sendJson(response, 200, { error: 'bad_verification_code' });
      const verifier = form.get('code_verifier') ?? '';
      if (grant.challenge && createHash('sha256').update(verifier).digest('base64url') !== grant.challenge) {
        return sendJson(response, 200, { error: 'bad_verification_code', error_description: 'PKCE verification failed' });
      }
      const accessToken = `gho_${randomBytes(16).toString('hex')}`;
      tokens.set(accessToken, grant.account);
      return sendJson(response, 200, { access_token: accessToken, token_type: 'bearer', scope: 'read:user,user:email' });
    }
    const owner = tokens.get(request.headers.authorization?.replace(/^Bearer /, '') ?? '');
    if (!owner) return sendJson(response, 401, { message: 'Bad credentials' });
    if (url.pathname === '/user')
      return sendJson(response, 200, { id: owner.id, login: owner.login, name: owner.name, email: owner.email });
    if (url.pathname === '/user/emails') return sendJson(response, 200, owner.emails);
    sendJson(response, 404, { message: 'Not Found' });
  });

  return {
    url: server.url,
    env: {
      CODEHOST_CLIENT_ID: options.clientId,
      CODEHOST_CLIENT_SECRET: options.clientSecret,
      CODEHOST_AUTHORIZE_URL: `${server.url}/login/oauth/authorize`,
      CODEHOST_TOKEN_URL: `${server.url}/login/oauth/access_token`,
      CODEHOST_API_URL: server.url,
    },
    /** The account the next authorization signs in as. */
    setAccount(next: CodehostAccount) {
      account = next;
    },
    close: server.close,
  };
}
