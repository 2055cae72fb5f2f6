// vendor.mjs - writes the JSON schemas of tests/deploy/schemas/ from the
// CRDs that KEDA and KServe generate from their Go API types (controller-gen),
// so that make k8s-check validates the ScaledObject and the InferenceService's
// autoscaling fields against what those projects' API servers check, with no
// network at test time.  Run it again to move to newer releases:
//
//   node tests/deploy/schemas/vendor.mjs NODE_MODULES KEDA_REPO KSERVE_REPO
//
// KEDA_REPO and KSERVE_REPO are git clones (or bare mirrors) of
// github.com/kedacore/keda and github.com/kserve/kserve; the files are read
// at their HEAD, whose commit each schema file records.  What is taken:
// - KEDA, config/crd/bases/keda.sh_scaledobjects.yaml: the served version's
//   openAPIV3Schema, verbatim;
// - KServe, config/crd/full/serving.kserve.io_inferenceservices.yaml: of
//   spec.predictor's properties, those of ComponentExtensionSpec
//   (pkg/apis/serving/v1beta1/component.go: replicas, scaling, autoScaling,
//   labels, annotations, ...), verbatim; the predictor's pod and model
//   fields are checked otherwise (k8s_check.mjs).
import { createRequire } from "module";
import { execFileSync } from "child_process";
import fs from "fs";
import path from "path";

const [modulesDir, kedaRepo, kserveRepo] = process.argv.slice(2);
if (!kserveRepo) {
  console.error("usage: node tests/deploy/schemas/vendor.mjs NODE_MODULES KEDA_REPO KSERVE_REPO");
  process.exit(2);
}
const require = createRequire(path.join(path.resolve(modulesDir), "noop.js"));
const YAML = require("yaml");
const HERE = path.dirname(new URL(import.meta.url).pathname);

function gitShow(repo, file) {
  const git = (...args) => execFileSync("git", ["-C", repo, ...args], { encoding: "utf8", maxBuffer: 1 << 28 });
  const commit = git("rev-parse", "HEAD").trim();
  const describe = git("describe", "--tags", "--always", "HEAD").trim();
  return { commit, describe, text: git("show", `${commit}:${file}`) };
}

function served(crd) {
  const versions = crd.spec.versions.filter((v) => v.served && v.storage);
  if (versions.length !== 1) throw new Error(`${crd.metadata.name}: not one served storage version`);
  return versions[0];
}

function write(name, repository, src, file, pointer, schema) {
  const out = {
    source: { repository, commit: src.commit, describe: src.describe, path: file, pointer,
              written_by: "tests/deploy/schemas/vendor.mjs" },
    schema,
  };
  fs.writeFileSync(path.join(HERE, name), JSON.stringify(out, null, 1) + "\n");
  console.log(`${name}: ${repository} ${src.describe} (${src.commit}) ${file} ${pointer}`);
}

// KEDA's ScaledObject.
{
  const file = "config/crd/bases/keda.sh_scaledobjects.yaml";
  const src = gitShow(kedaRepo, file);
  const v = served(YAML.parse(src.text));
  write("keda.sh_scaledobjects.json", "github.com/kedacore/keda", src, file,
        `/spec/versions[name=${v.name}]/schema/openAPIV3Schema`, v.schema.openAPIV3Schema);
}

// KServe's ComponentExtensionSpec, as the predictor embeds it.
{
  const file = "config/crd/full/serving.kserve.io_inferenceservices.yaml";
  const src = gitShow(kserveRepo, file);
  const v = served(YAML.parse(src.text));
  const predictor = v.schema.openAPIV3Schema.properties.spec.properties.predictor;
  // ComponentExtensionSpec's json names (component.go).
  const keys = ["minReplicas", "maxReplicas", "scaleTarget", "scaleMetric", "scaleMetricType", "autoScaling",
                "containerConcurrency", "timeout", "canaryTrafficPercent", "logger", "batcher", "labels",
                "annotations", "deploymentStrategy"];
  const properties = {};
  for (const k of keys) {
    if (!predictor.properties[k]) throw new Error(`${file}: the predictor has no ${k}`);
    properties[k] = predictor.properties[k];
  }
  write("kserve_componentextension.json", "github.com/kserve/kserve", src, file,
        `/spec/versions[name=${v.name}]/schema/openAPIV3Schema/properties/spec/properties/predictor/properties/{${keys.join(",")}}`,
        { type: "object", properties });
}
