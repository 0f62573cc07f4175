import type { LookupAddress } from 'node:dns';
import { describe, expect, it } from 'vitest';
import { guardedLookup, isMetadataAddress, OutboundRefused, outboundUrlProblem } from './address-guard.ts';
import { isPublicAddress } from './address-guard.ts';

describe('public addresses', () => {
  it.each([
    ['93.184.215.14', true],
    ['2606:2800:21f:cb07:6820:80da:af6b:8b2c', true],
    ['127.0.0.1', false],
    ['10.0.0.1', false],
    ['172.16.5.4', false],
    ['192.168.0.1', false],
    ['169.254.169.254', false],
    ['100.64.0.1', false],
    ['0.0.0.0', false],
    ['::1', false],
    ['::', false],
    ['fe80::1', false],
    ['fd00:ec2::254', false],
    ['fec0::1', false],
    ['feff:ffff::1', false],
    ['::ffff:127.0.0.1', false],
    ['::ffff:10.0.0.1', false],
    // IPv6 that carries an IPv4 address: compatible (as Node's URL writes [::127.0.0.1]), mapped, NAT64, 6to4, Teredo.
    ['::7f00:1', false],
    ['::a9fe:a9fe', false],
    ['::a00:1', false],
    ['::808:808', false],
    ['::ffff:a9fe:a9fe', false],
    ['64:ff9b::a00:1', false],
    ['64:ff9b:1::a00:1', false],
    ['2002:a00:1::', false],
    ['2002:7f00:1::1', false],
    ['2001:0:4136:e378:8000:63bf:f5ff:fffe', false],
    ['not an address', false],
  ])('%s public: %s', (address, expected) => {
    expect(isPublicAddress(address)).toBe(expected);
  });
});

describe('cloud metadata addresses (refused even where private networks are allowed)', () => {
  it.each([
    ['169.254.169.254', true],
    ['169.254.170.2', true],
    ['::ffff:169.254.169.254', true],
    ['::ffff:a9fe:a9fe', true],
    ['::a9fe:a9fe', true],
    ['64:ff9b::a9fe:a9fe', true],
    ['fd00:ec2::254', true],
    ['fe80::1', true],
    ['100.100.100.200', true],
    ['not an address', true],
    ['127.0.0.1', false],
    ['10.0.0.8', false],
    ['192.168.1.10', false],
    ['::1', false],
    ['fd00:ec2::253', false],
    ['100.100.100.201', false],
    ['93.184.215.14', false],
  ])('%s metadata: %s', (address, expected) => {
    expect(isMetadataAddress(address)).toBe(expected);
  });
});

describe('outboundUrlProblem', () => {
  const strict = { allowPrivateNetworks: false };
  const privateAllowed = { allowPrivateNetworks: true };

  it('public only: refuses private addresses, written or behind a name, and names that do not resolve', async () => {
    expect(await outboundUrlProblem('https://93.184.215.14/hook', strict)).toBeNull();
    expect(await outboundUrlProblem('http://10.0.0.1/x', strict)).toBe('10.0.0.1 is not a public address');
    expect(await outboundUrlProblem('http://localhost:8080/x', strict)).toMatch(
      /^localhost resolves to .*, which is not a public address$/,
    );
    expect(await outboundUrlProblem('http://nothing.invalid/x', strict)).toBe('nothing.invalid does not resolve');
    expect(await outboundUrlProblem('ftp://93.184.215.14/x', strict)).toBe('must be an http or https URL');
  });

  it('private networks allowed: loopback and private addresses pass, a metadata service never does', async () => {
    for (const url of ['http://127.0.0.1:8080/x', 'http://10.0.0.8/x', 'http://localhost:8080/x', 'http://[::1]:8080/x'])
      expect(await outboundUrlProblem(url, privateAllowed), url).toBeNull();
    expect(await outboundUrlProblem('http://169.254.169.254/latest/meta-data', privateAllowed)).toBe(
      '169.254.169.254 is a cloud metadata address, never called',
    );
    expect(await outboundUrlProblem('http://[fd00:ec2::254]/', privateAllowed)).toBe(
      'fd00:ec2::254 is a cloud metadata address, never called',
    );
    // A private network's name may resolve only where connections are made: the connection checks it.
    expect(await outboundUrlProblem('http://nothing.invalid/x', privateAllowed)).toBeNull();
  });
});

describe('the guarded lookup a connection makes', () => {
  const resolvingTo =
    (...addresses: string[]) =>
    (_hostname: string, _options: { all: true }, callback: (error: Error | null, found: LookupAddress[]) => void) =>
      callback(
        null,
        addresses.map((address) => ({ address, family: address.includes(':') ? 6 : 4 })),
      );
  const lookUp = (guard: { allowPrivateNetworks: boolean }, all: boolean, ...addresses: string[]) =>
    new Promise<{ error: Error | null; address: unknown }>((resolve) =>
      guardedLookup(guard, resolvingTo(...addresses))('name.example', { all }, (error, address) => resolve({ error, address })),
    );

  it('hands over what the name resolves to when every address passes', async () => {
    expect(await lookUp({ allowPrivateNetworks: false }, false, '93.184.215.14')).toEqual({
      error: null,
      address: '93.184.215.14',
    });
    expect((await lookUp({ allowPrivateNetworks: true }, true, '10.0.0.8', '::1')).address).toEqual([
      { address: '10.0.0.8', family: 4 },
      { address: '::1', family: 6 },
    ]);
  });

  it('fails when any address of the name is refused: a rebinding name gets no connection', async () => {
    const rebound = await lookUp({ allowPrivateNetworks: true }, false, '10.0.0.8', '169.254.169.254');
    expect(rebound.error).toBeInstanceOf(OutboundRefused);
    expect(rebound.error!.message).toBe(
      'name.example resolves to 169.254.169.254, which is a cloud metadata address, never called',
    );
    const strictly = await lookUp({ allowPrivateNetworks: false }, true, '93.184.215.14', '10.0.0.1');
    expect(strictly.error!.message).toBe('name.example resolves to 10.0.0.1, which is not a public address');
  });
});
