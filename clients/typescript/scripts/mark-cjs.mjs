// dist/cjs holds CommonJS files in an ESM package ("type": "module"): a package.json
// of its own tells Node (and TypeScript) to read its .js and .d.ts files as CommonJS.
import { writeFileSync } from "node:fs";

writeFileSync(new URL("../dist/cjs/package.json", import.meta.url), '{ "type": "commonjs" }\n');
