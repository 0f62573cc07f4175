#!/usr/bin/env node
// The package bin: Node >= 22.18 runs the TypeScript sources directly (type stripping).
import '../src/cli.ts';
