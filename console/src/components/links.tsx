import { Anchor, type AnchorProps, Button, type ButtonProps, NavLink, type NavLinkProps } from '@mantine/core';
import { createLink, type LinkComponent } from '@tanstack/react-router';
import type { AnchorHTMLAttributes, Ref } from 'react';

// Mantine's components as router links (the TanStack Router recipe for Mantine): typed routes and
// params, client-side navigation, preloading on intent.
type AnchorAttributes = Omit<AnchorHTMLAttributes<HTMLAnchorElement>, 'color' | 'style'> & { ref?: Ref<HTMLAnchorElement> };

const MantineAnchor = (props: AnchorProps & AnchorAttributes) => <Anchor component="a" {...props} />;
const MantineButton = (props: ButtonProps & AnchorAttributes) => <Button component="a" {...props} />;
const MantineNavLink = (props: NavLinkProps & AnchorAttributes) => <NavLink component="a" {...props} />;

const CreatedAnchor = createLink(MantineAnchor);
const CreatedButton = createLink(MantineButton);
const CreatedNavLink = createLink(MantineNavLink);

export const AnchorLink: LinkComponent<typeof MantineAnchor> = (props) => <CreatedAnchor preload="intent" {...props} />;
export const ButtonLink: LinkComponent<typeof MantineButton> = (props) => <CreatedButton preload="intent" {...props} />;
export const NavLinkLink: LinkComponent<typeof MantineNavLink> = (props) => <CreatedNavLink preload="intent" {...props} />;
