/** Spec 2.4: a pluggable provider that turns a foreign token into a user. */
export interface ExternalUserData {
  externalUserId: string;
  email: string;
  firstName?: string;
  lastName?: string;
  isAdmin?: boolean;
}

export interface ValidateTokenResult {
  isValid: boolean;
  userData?: ExternalUserData;
  error?: string;
}

/** Limits a provider sets on a user's model messages: at most `maxMessages` until `resetDate`. */
export interface UserLimits {
  maxMessages?: number;
  resetDate?: Date;
}

export interface ExternalAuthProvider {
  name: string;
  validateToken(authToken: string): Promise<ValidateTokenResult>;
  getUserLimits?(externalUserId: string, authToken: string): Promise<UserLimits>;
}

export interface ExternalAuthRegistry {
  registerExternalAuthProvider(provider: ExternalAuthProvider): void;
  getExternalAuthProvider(name: string): ExternalAuthProvider | undefined;
  providerNames(): string[];
}

export function createExternalAuthRegistry(): ExternalAuthRegistry {
  const providers = new Map<string, ExternalAuthProvider>();
  return {
    registerExternalAuthProvider(provider) {
      if (!provider.name) throw new Error('An external auth provider needs a name');
      providers.set(provider.name, provider);
    },
    getExternalAuthProvider: (name) => providers.get(name),
    providerNames: () => [...providers.keys()],
  };
}
