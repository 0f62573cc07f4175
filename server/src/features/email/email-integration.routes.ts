import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { errorSchema, orgParams, sessionSecurity } from '../../lib/http-schemas.ts';
import { orgOf } from '../../lib/request-context.ts';
import type { OrgAccess } from '../orgs/org-access.ts';
import {
  connectionTestSchema,
  type EmailIntegrationInput,
  emailIntegrationInput,
  emailIntegrationSchema,
} from './email-integration.schemas.ts';
import type { EmailIntegrationService } from './email-integration.service.ts';

const errors = { 400: errorSchema, 401: errorSchema, 403: errorSchema, 404: errorSchema, 409: errorSchema };
/**
 * The integration to test before saving it, or nothing: the saved one. One object rather than a union
 * of the two, so that a bad field is named as the save names it (a union says "Invalid input", or
 * answers for its other branch: `{"apiKey": ...}` was "Unrecognized key").
 */
const testBody = emailIntegrationInput
  .partial({ fromEmail: true })
  .superRefine((body, context) => {
    if (body.fromEmail === undefined && Object.keys(body).length > 0)
      context.addIssue({
        code: 'custom',
        path: ['fromEmail'],
        message: 'required: the sender to test (with no body, the saved integration is tested)',
      });
  })
  .describe('The integration to test, as a PUT would save it (fromEmail required); none, or {}: the saved integration')
  .prefault({});
const isIntegration = (body: z.output<typeof testBody>): body is EmailIntegrationInput => body.fromEmail !== undefined;

export function emailIntegrationRoutes(deps: {
  emailIntegration: EmailIntegrationService;
  orgAccess: OrgAccess;
}): FastifyPluginAsyncZod {
  return async (app) => {
    const preHandler = deps.orgAccess('Admin');
    const common = { tags: ['email'], security: sessionSecurity };
    const url = '/orgs/:org/email/integration';

    app.get(
      url,
      {
        schema: {
          operationId: 'getEmailIntegration',
          ...common,
          summary: "The org's email integration (hints of its secrets only) and its sender domain's last known status",
          params: orgParams,
          response: { 200: emailIntegrationSchema, ...errors },
        },
        preHandler,
      },
      async (request) => deps.emailIntegration.get(orgOf(request).id),
    );
    app.put(
      url,
      {
        schema: {
          operationId: 'saveEmailIntegration',
          ...common,
          summary:
            'Save the email integration (the API key and webhook secret are encrypted and never shown again; left out, ' +
            'the saved ones are kept)',
          params: orgParams,
          body: emailIntegrationInput,
          response: { 200: emailIntegrationSchema, ...errors },
        },
        preHandler,
      },
      async (request) => deps.emailIntegration.save(orgOf(request).id, request.body),
    );
    app.delete(
      url,
      {
        schema: {
          operationId: 'deleteEmailIntegration',
          ...common,
          summary: 'Remove the email integration',
          params: orgParams,
          response: { 204: z.null(), ...errors },
        },
        preHandler,
      },
      async (request, reply) => {
        await deps.emailIntegration.remove(orgOf(request).id);
        return reply.status(204).send(null);
      },
    );
    app.post(
      `${url}/test`,
      {
        schema: {
          operationId: 'testEmailIntegration',
          ...common,
          summary:
            'Connection test: the key, the sender domain verified, and able to receive (of the body, or of the saved ' +
            'integration)',
          params: orgParams,
          body: testBody,
          response: { 200: connectionTestSchema, ...errors },
        },
        preHandler,
      },
      async (request) => deps.emailIntegration.test(orgOf(request).id, isIntegration(request.body) ? request.body : undefined),
    );
  };
}
