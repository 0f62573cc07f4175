import { FormError } from '../../components/FormParts';
import { AnchorLink, ButtonLink } from '../../components/links';
import { zodResolver } from '@hookform/resolvers/zod';
import { Alert, Button, PasswordInput, Stack, Text, TextInput } from '@mantine/core';
import { useMutation } from '@tanstack/react-query';
import { useSearch } from '@tanstack/react-router';
import { useForm } from 'react-hook-form';
import { z } from 'zod';
import { api, unwrap } from '../../api/client';
import { AuthCard } from '../../components/AuthCard';

const forgotSchema = z.object({ email: z.email('Enter an email address') });

export function ForgotPasswordPage() {
  const form = useForm<z.infer<typeof forgotSchema>>({ resolver: zodResolver(forgotSchema), defaultValues: { email: '' } });
  const send = useMutation({ mutationFn: (body: { email: string }) => unwrap(api.POST('/auth/forgot-password', { body })) });
  return (
    <AuthCard title="Reset your password">
      {send.isSuccess ? (
        <Alert color="green" role="status">
          If an account uses that address, a reset link is on its way. The link works for one hour.
        </Alert>
      ) : (
        <form onSubmit={form.handleSubmit((values) => send.mutate(values))} noValidate>
          <Stack>
            <FormError error={send.error} />
            <TextInput
              label="Email"
              type="email"
              autoComplete="username"
              {...form.register('email')}
              error={form.formState.errors.email?.message}
            />
            <Button type="submit" loading={send.isPending}>
              Send the reset link
            </Button>
          </Stack>
        </form>
      )}
      <AnchorLink to="/sign-in" size="sm">
        Back to sign in
      </AnchorLink>
    </AuthCard>
  );
}

const resetSchema = z
  .object({ newPassword: z.string().min(8, 'Use at least 8 characters'), confirm: z.string() })
  .refine((values) => values.newPassword === values.confirm, { path: ['confirm'], message: 'The passwords differ' });

export function ResetPasswordPage() {
  const { token } = useSearch({ from: '/reset-password' });
  const form = useForm<z.infer<typeof resetSchema>>({
    resolver: zodResolver(resetSchema),
    defaultValues: { newPassword: '', confirm: '' },
  });
  const reset = useMutation({
    mutationFn: (newPassword: string) => unwrap(api.POST('/auth/reset-password', { body: { token: token ?? '', newPassword } })),
  });
  if (!token) {
    return (
      <AuthCard title="Choose a new password">
        <Text>This link has no reset token. Ask for a new link.</Text>
        <AnchorLink to="/forgot-password">Send a new link</AnchorLink>
      </AuthCard>
    );
  }
  return (
    <AuthCard title="Choose a new password">
      {reset.isSuccess ? (
        <Stack>
          <Alert color="green" role="status">
            Your password is changed, and every other session of your account is signed out.
          </Alert>
          <ButtonLink to="/sign-in">Sign in</ButtonLink>
        </Stack>
      ) : (
        <form onSubmit={form.handleSubmit((values) => reset.mutate(values.newPassword))} noValidate>
          <Stack>
            <FormError error={reset.error} />
            <PasswordInput
              label="New password"
              autoComplete="new-password"
              {...form.register('newPassword')}
              error={form.formState.errors.newPassword?.message}
            />
            <PasswordInput
              label="Repeat it"
              autoComplete="new-password"
              {...form.register('confirm')}
              error={form.formState.errors.confirm?.message}
            />
            <Button type="submit" loading={reset.isPending}>
              Set the new password
            </Button>
          </Stack>
        </form>
      )}
    </AuthCard>
  );
}
