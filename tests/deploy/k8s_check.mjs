// k8s_check.mjs - deploy/kubernetes/ against the Kubernetes schemas and
// against attnd itself (make k8s-check, run by make test):
//
//   node tests/deploy/k8s_check.mjs ATTND_BIN NODE_MODULES [KUBECTL]
//
// Each kustomization (base, overlays/weights, kserve) is built the way
// `kubectl apply -k` builds it (`kubectl kustomize`), and every object it
// yields is validated:
// - Kubernetes kinds by kubernetes-models (npm: the API server's OpenAPI
//   schemas as validators);
// - KServe's ServingRuntime and InferenceService by the schema below, written
//   from KServe's API types (pkg/apis/serving/v1alpha1 servingruntime_types.go,
//   v1beta1 component.go, predictor.go, model.go), their containers and pod
//   fields again by kubernetes-models;
// then what attnd needs of them: the probes on /v2/health/ready and
// /v2/health/live, a grace period longer than the drain, the security
// settings, selectors that select the pods, every ATTND_* variable one attnd
// knows (its --help), and the ConfigMap's attnd.json accepted by
// `attnd --check-config`.  A manifest broken on purpose must be refused, so
// the validators are seen to work.  Running the Deployment for real (podman
// kube play) is part of make container-check, which builds the image.
import { createRequire } from "module";
import { execFileSync, spawnSync } from "child_process";
import fs from "fs";
import os from "os";
import path from "path";

const [attndBin, modulesDir, kubectl = "kubectl"] = process.argv.slice(2);
if (!modulesDir) {
  console.error("usage: node tests/deploy/k8s_check.mjs ATTND_BIN NODE_MODULES [KUBECTL]");
  process.exit(2);
}
const require = createRequire(path.join(path.resolve(modulesDir), "noop.js"));
const YAML = require("yaml");
const Ajv = require("ajv");
const ROOT = path.resolve(path.dirname(new URL(import.meta.url).pathname), "../..");
const KUSTOMIZATIONS = ["deploy/kubernetes/base", "deploy/kubernetes/overlays/weights",
                        "deploy/kubernetes/kserve"];
const problems = [];
let validated = 0;

function fail(where, what) {
  problems.push(`${where}: ${what}`);
}

// ---- schemas ------------------------------------------------------------------

// kubernetes-models' class for apiVersion + kind ("apps/v1" Deployment ->
// kubernetes-models/apps/v1/Deployment), or null.
function k8sClass(apiVersion, kind) {
  try {
    const mod = require(kind === "ObjectMeta" ? "@kubernetes-models/apimachinery/apis/meta/v1/ObjectMeta"
                                              : `kubernetes-models/${apiVersion}/${kind}`);
    return mod[kind] || null;
  } catch {
    return null;
  }
}

function k8sValidate(apiVersion, kind, value) {
  const Cls = k8sClass(apiVersion, kind);
  if (!Cls) throw new Error(`no schema for ${apiVersion} ${kind}`);
  new Cls(value).validate();
}

// KServe: the fields of its types these manifests may use.
const strMap = { type: "object", additionalProperties: { type: "string" } };
const KSERVE = {
  ServingRuntime: {
    type: "object", required: ["apiVersion", "kind", "metadata", "spec"], additionalProperties: false,
    properties: {
      apiVersion: { const: "serving.kserve.io/v1alpha1" }, kind: { const: "ServingRuntime" },
      metadata: { type: "object" },
      spec: {
        type: "object", required: ["containers", "supportedModelFormats"], additionalProperties: false,
        properties: {
          supportedModelFormats: { type: "array", minItems: 1, items: {
            type: "object", required: ["name"], additionalProperties: false,
            properties: { name: { type: "string" }, version: { type: "string" },
                          autoSelect: { type: "boolean" }, priority: { type: "integer", minimum: 1 } } } },
          protocolVersions: { type: "array", items: { enum: ["v1", "v2", "grpc-v1", "grpc-v2"] } },
          multiModel: { type: "boolean" },
          disabled: { type: "boolean" },
          containers: { type: "array", minItems: 1, items: { type: "object" } },
          volumes: { type: "array" },
          nodeSelector: strMap,
          annotations: strMap,
          labels: strMap,
        },
      },
    },
  },
  InferenceService: {
    type: "object", required: ["apiVersion", "kind", "metadata", "spec"], additionalProperties: false,
    properties: {
      apiVersion: { const: "serving.kserve.io/v1beta1" }, kind: { const: "InferenceService" },
      metadata: { type: "object", required: ["name"],
                  properties: { name: { type: "string", pattern: "^[a-z]([-a-z0-9]*[a-z0-9])?$" } } },
      spec: {
        type: "object", required: ["predictor"], additionalProperties: false,
        properties: {
          predictor: {
            type: "object", required: ["model"],
            properties: {
              minReplicas: { type: "integer", minimum: 0 }, maxReplicas: { type: "integer", minimum: 0 },
              scaleTarget: { type: "integer" }, scaleMetric: { enum: ["cpu", "memory", "concurrency", "rps"] },
              containerConcurrency: { type: "integer", minimum: 0 }, timeout: { type: "integer" },
              model: {
                type: "object", required: ["modelFormat"],
                properties: {
                  modelFormat: { type: "object", required: ["name"], additionalProperties: false,
                                 properties: { name: { type: "string" }, version: { type: "string" } } },
                  runtime: { type: "string" },
                  protocolVersion: { enum: ["v1", "v2", "grpc-v2"] },
                  storageUri: { type: "string" },
                },
              },
            },
          },
        },
      },
    },
  },
};
// The predictor's and the model's own keys; the rest of the predictor is a
// PodSpec, the rest of the model a Container (KServe embeds both).
const PREDICTOR_KEYS = ["minReplicas", "maxReplicas", "scaleTarget", "scaleMetric", "containerConcurrency",
                        "timeout", "canaryTrafficPercent", "logger", "batcher", "labels", "annotations",
                        "deploymentStrategy", "model"];
const MODEL_KEYS = ["modelFormat", "runtime", "protocolVersion", "storageUri", "storage"];
const ajv = new (Ajv.default || Ajv)({ strict: false, allErrors: false });
const kserveValidators = Object.fromEntries(Object.entries(KSERVE).map(([k, s]) => [k, ajv.compile(s)]));

function without(obj, keys) {
  return Object.fromEntries(Object.entries(obj).filter(([k]) => !keys.includes(k)));
}

// Validates one object; throws with the first error.
function validateObject(o) {
  if (typeof o !== "object" || !o || !o.apiVersion || !o.kind) throw new Error("not a Kubernetes object");
  if (o.apiVersion.startsWith("serving.kserve.io/")) {
    const v = kserveValidators[o.kind];
    if (!v) throw new Error(`no schema for ${o.apiVersion} ${o.kind}`);
    if (!v(o)) throw new Error(`${v.errors[0].instancePath} ${v.errors[0].message}`);
    k8sValidate("v1", "ObjectMeta", o.metadata);
    if (o.kind === "ServingRuntime")
      for (const c of o.spec.containers) k8sValidate("v1", "Container", c);
    else {
      const p = o.spec.predictor;
      k8sValidate("v1", "PodSpec", { containers: [], ...without(p, PREDICTOR_KEYS) });
      k8sValidate("v1", "Container", { name: "kserve-container", ...without(p.model, MODEL_KEYS) });
    }
    return;
  }
  k8sValidate(o.apiVersion, o.kind, o);
}

// ---- what attnd needs of them -----------------------------------------------------

const help = execFileSync(attndBin, ["--help"], { encoding: "utf8" });
const knownVars = new Set(help.match(/ATTND_[A-Z_]+/g));

function checkEnv(where, env) {
  for (const e of env || [])
    if (e.name.startsWith("ATTND_") && !knownVars.has(e.name))
      fail(where, `${e.name} is no setting of attnd (attnd --help)`);
}

function checkContainerSecurity(where, c, pod) {
  const sc = c.securityContext || {};
  const ps = pod || {};
  if (!(sc.runAsNonRoot || ps.runAsNonRoot)) fail(where, "runAsNonRoot is not set");
  if (sc.allowPrivilegeEscalation !== false) fail(where, "allowPrivilegeEscalation is not false");
  if (sc.readOnlyRootFilesystem !== true) fail(where, "readOnlyRootFilesystem is not true");
  if (!(sc.capabilities && (sc.capabilities.drop || []).includes("ALL"))) fail(where, "capabilities are not all dropped");
  const seccomp = (sc.seccompProfile || ps.seccompProfile || {}).type;
  if (seccomp !== "RuntimeDefault") fail(where, `seccompProfile is ${seccomp}, not RuntimeDefault`);
}

function checkProbes(where, c) {
  const get = (p) => p && p.httpGet && p.httpGet.path;
  if (get(c.readinessProbe) !== "/v2/health/ready") fail(where, "readiness is not /v2/health/ready");
  if (get(c.livenessProbe) !== "/v2/health/live") fail(where, "liveness is not /v2/health/live");
}

function matches(selector, labels) {
  return Object.entries(selector || {}).every(([k, v]) => labels && labels[k] === v) &&
    Object.keys(selector || {}).length > 0;
}

function checkKustomization(dir, objects) {
  const byKind = (k) => objects.filter((o) => o.kind === k);
  for (const d of byKind("Deployment")) {
    const where = `${dir}: Deployment ${d.metadata.name}`;
    const pod = d.spec.template;
    const cm = byKind("ConfigMap")[0];
    const config = cm && JSON.parse(cm.data["attnd.json"]);
    const drain = config ? config.server.drain_seconds || 0 : 0;
    if (!(pod.spec.terminationGracePeriodSeconds > drain))
      fail(where, `terminationGracePeriodSeconds ${pod.spec.terminationGracePeriodSeconds} is not above the drain (${drain} s)`);
    if (!matches(d.spec.selector.matchLabels, pod.metadata.labels)) fail(where, "its selector does not select its pods");
    for (const c of pod.spec.containers) {
      checkContainerSecurity(`${where} container ${c.name}`, c, pod.spec.securityContext);
      checkProbes(`${where} container ${c.name}`, c);
      if (!c.startupProbe) fail(where, "no startup probe (large weights take time to load)");
      if (!(c.resources && c.resources.limits && c.resources.limits.cpu && c.resources.limits.memory))
        fail(where, "no CPU and memory limits");
      if (!(c.env || []).some((e) => e.name === "ATTND_FORWARD_THREADS" && e.valueFrom &&
                                     e.valueFrom.resourceFieldRef.resource === "limits.cpu"))
        fail(where, "forward threads are not set from the CPU limit");
      checkEnv(`${where} container ${c.name}`, c.env);
      for (const m of c.volumeMounts || [])
        if (!pod.spec.volumes.some((v) => v.name === m.name)) fail(where, `mount ${m.name} has no volume`);
    }
    for (const v of pod.spec.volumes || []) {
      if (v.configMap && !byKind("ConfigMap").some((c) => c.metadata.name === v.configMap.name))
        fail(where, `volume ${v.name}: no ConfigMap ${v.configMap.name}`);
      if (v.persistentVolumeClaim &&
          !byKind("PersistentVolumeClaim").some((c) => c.metadata.name === v.persistentVolumeClaim.claimName))
        fail(where, `volume ${v.name}: no claim ${v.persistentVolumeClaim.claimName}`);
    }
    for (const s of byKind("Service"))
      if (!matches(s.spec.selector, pod.metadata.labels)) fail(`${dir}: Service ${s.metadata.name}`, "selects no pod");
    for (const p of byKind("PodDisruptionBudget"))
      if (!matches(p.spec.selector && p.spec.selector.matchLabels, pod.metadata.labels))
        fail(`${dir}: PodDisruptionBudget ${p.metadata.name}`, "selects no pod");
    for (const h of byKind("HorizontalPodAutoscaler"))
      if (h.spec.scaleTargetRef.kind !== "Deployment" || h.spec.scaleTargetRef.name !== d.metadata.name)
        fail(`${dir}: HorizontalPodAutoscaler ${h.metadata.name}`, "does not scale the Deployment");
  }
  for (const cm of byKind("ConfigMap")) {
    // attnd itself judges its configuration.
    const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), "attnd-k8s-")), "attnd.json");
    fs.writeFileSync(file, cm.data["attnd.json"]);
    const r = spawnSync(attndBin, ["--check-config"], { env: { ...process.env, ATTND_CONFIG: file },
                                                        encoding: "utf8" });
    if (r.status !== 0) fail(`${dir}: ConfigMap ${cm.metadata.name}`, `attnd --check-config: ${r.stderr.trim()}`);
    fs.rmSync(path.dirname(file), { recursive: true, force: true });
  }
  for (const rt of byKind("ServingRuntime")) {
    const where = `${dir}: ServingRuntime ${rt.metadata.name}`;
    if (!(rt.spec.protocolVersions || []).includes("v2")) fail(where, "does not speak v2");
    for (const c of rt.spec.containers) {
      checkContainerSecurity(`${where} container ${c.name}`, c, null);
      checkProbes(`${where} container ${c.name}`, c);
      checkEnv(where, c.env);
      for (const a of c.args || []) {
        const flag = a.split("=")[0];
        if (!help.includes(flag + " ")) fail(where, `${flag} is no flag of attnd`);
      }
    }
  }
  for (const isvc of byKind("InferenceService")) {
    const where = `${dir}: InferenceService ${isvc.metadata.name}`;
    const m = isvc.spec.predictor.model;
    const rt = byKind("ServingRuntime").find((r) => r.metadata.name === m.runtime);
    if (!rt) fail(where, `no ServingRuntime ${m.runtime}`);
    else if (!rt.spec.supportedModelFormats.some((f) => f.name === m.modelFormat.name))
      fail(where, `runtime ${m.runtime} does not take ${m.modelFormat.name}`);
    if (m.protocolVersion !== "v2") fail(where, "not the v2 protocol");
    checkEnv(where, m.env);
    if (!(isvc.spec.predictor.terminationGracePeriodSeconds > 15)) fail(where, "grace period not above the drain");
  }
}

// ---- main ---------------------------------------------------------------------------

// The validators refuse what they should (or this check proves nothing).
for (const [what, bad] of [
  ["replicas as a string", { apiVersion: "apps/v1", kind: "Deployment", metadata: { name: "x" },
     spec: { replicas: "two", selector: {}, template: { spec: { containers: [] } } } }],
  ["a probe port of the wrong type", { apiVersion: "v1", kind: "Service", metadata: { name: "x" },
     spec: { ports: [{ port: "eighty" }] } }],
  ["an unknown KServe protocol", { apiVersion: "serving.kserve.io/v1alpha1", kind: "ServingRuntime",
     metadata: { name: "x" }, spec: { supportedModelFormats: [{ name: "a" }], protocolVersions: ["v9"],
                                      containers: [{ name: "c", image: "i" }] } }],
  ["a KServe container field misspelt", { apiVersion: "serving.kserve.io/v1alpha1", kind: "ServingRuntime",
     metadata: { name: "x" }, spec: { supportedModelFormats: [{ name: "a" }],
                                      containers: [{ name: "c", image: "i", ports: [{ containerPort: "x" }] }] } }],
]) {
  let refused = false;
  try {
    validateObject(bad);
  } catch {
    refused = true;
  }
  if (!refused) fail("self-check", `${what} was not refused`);
}

for (const dir of KUSTOMIZATIONS) {
  let text;
  try {
    text = execFileSync(kubectl, ["kustomize", path.join(ROOT, dir)], { encoding: "utf8" });
  } catch (e) {
    fail(dir, `kubectl kustomize: ${e.stderr || e.message}`);
    continue;
  }
  const objects = YAML.parseAllDocuments(text).map((d) => d.toJS()).filter(Boolean);
  for (const o of objects) {
    try {
      validateObject(o);
      validated++;
    } catch (e) {
      fail(`${dir}: ${o.kind} ${o.metadata && o.metadata.name}`, e.message);
    }
  }
  checkKustomization(dir, objects);
  console.log(`${dir}: ${objects.map((o) => o.kind).join(", ")}`);
}
for (const p of problems) console.log("FAILED " + p);
console.log(`k8s check: ${validated} objects validated, ${problems.length} problems`);
process.exit(problems.length ? 1 : 0);
