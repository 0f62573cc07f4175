import { FormError } from '../../components/FormParts';
import { AnchorLink } from '../../components/links';
import { zodResolver } from '@hookform/resolvers/zod';
import { Button, Divider, PasswordInput, Stack, TextInput } from '@mantine/core';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useNavigate, useSearch } from '@tanstack/react-router';
import { useForm } from 'react-hook-form';
import { z } from 'zod';
import { api, unwrap } from '../../api/client';
import { AuthCard } from '../../components/AuthCard';
import { keys } from '../../lib/queries';

const schema = z.object({ email: z.email('Enter an email address'), password: z.string().min(1, 'Enter your password') });
type SignIn = z.infer<typeof schema>;

const OAUTH_LABELS: Record<string, string> = { codehost: 'Sign in with code host', idp: 'Sign in with single sign-on' };

/** Only a path on this origin: a crafted ?redirect= never sends an operator elsewhere. */
const safeRedirect = (target: string | undefined) => (target?.startsWith('/') && !target.startsWith('//') ? target : '/');

export function SignInPage() {
  const { redirect } = useSearch({ from: '/sign-in' });
  const navigate = useNavigate();
  const queryClient = useQueryClient();
  const methods = useQuery({ queryKey: ['auth-methods'], queryFn: () => unwrap(api.GET('/auth/methods')), staleTime: Infinity });
  const form = useForm<SignIn>({ resolver: zodResolver(schema), defaultValues: { email: '', password: '' } });
  const signIn = useMutation({
    mutationFn: (body: SignIn) => unwrap(api.POST('/auth/login/credentials', { body })),
    onSuccess: async () => {
      queryClient.clear();
      await queryClient.fetchQuery({ queryKey: keys.me, queryFn: () => unwrap(api.GET('/auth/me')) });
      await navigate({ href: safeRedirect(redirect) });
    },
  });

  return (
    <AuthCard title="Sign in to Agent Platform">
      <form onSubmit={form.handleSubmit((values) => signIn.mutate(values))} noValidate>
        <Stack>
          <FormError error={signIn.error} />
          <TextInput
            label="Email"
            type="email"
            autoComplete="username"
            {...form.register('email')}
            error={form.formState.errors.email?.message}
          />
          <PasswordInput
            label="Password"
            autoComplete="current-password"
            {...form.register('password')}
            error={form.formState.errors.password?.message}
          />
          <Button type="submit" loading={signIn.isPending}>
            Sign in
          </Button>
          <AnchorLink to="/forgot-password" size="sm">
            Forgot your password?
          </AnchorLink>
        </Stack>
      </form>
      {(methods.data?.oauth.length ?? 0) > 0 && (
        <>
          <Divider label="or" labelPosition="center" />
          {methods.data?.oauth.map((name) => (
            // A full navigation: the provider's pages are not ours to route.
            <Button key={name} component="a" href={`/auth/${name}`} variant="default">
              {OAUTH_LABELS[name] ?? name}
            </Button>
          ))}
        </>
      )}
    </AuthCard>
  );
}
