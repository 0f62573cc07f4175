import { Alert, type CSSVariablesResolver, createTheme, Modal, Notification } from '@mantine/core';

export const theme = createTheme({
  primaryColor: 'indigo',
  // Transitions follow the operator's "reduce motion" setting.
  respectReducedMotion: true,
  // WCAG AA contrast: filled colours and light-variant text at shade 9 (Mantine's 6 fails on white),
  // and text on a filled colour black or white, whichever reads.
  primaryShade: 9,
  autoContrast: true,
  defaultRadius: 'sm',
  fontFamily: 'system-ui, -apple-system, "Segoe UI", Roboto, sans-serif',
  // Icon-only close buttons need a name for screen readers (axe: button-name); alert titles in the
  // text colour (yellow or orange on their light background fails contrast), the alert's colour on its border.
  components: {
    Alert: Alert.extend({ styles: { title: { color: 'var(--mantine-color-text)' } } }),
    Modal: Modal.extend({ defaultProps: { closeButtonProps: { 'aria-label': 'Close' } } }),
    // A titled notification's message is in gray 6, below AA on white: in the dimmed colour (gray 7) instead.
    Notification: Notification.extend({
      defaultProps: { closeButtonProps: { 'aria-label': 'Close notification' } },
      styles: { description: { color: 'var(--mantine-color-dimmed)' } },
    }),
  },
  fontFamilyMonospace: 'ui-monospace, SFMono-Regular, Menlo, Consolas, monospace',
});

/** Mantine's dimmed text (gray 6) is below WCAG AA contrast on white; gray 7 passes. */
export const cssVariablesResolver: CSSVariablesResolver = () => ({
  variables: {},
  light: { '--mantine-color-dimmed': 'var(--mantine-color-gray-7)' },
  dark: {},
});
