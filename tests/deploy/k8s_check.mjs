// k8s_check.mjs - deploy/kubernetes/ against the Kubernetes schemas, KEDA's
// and KServe's, and against attnd itself (make k8s-check, run by make test):
//
//   node tests/deploy/k8s_check.mjs ATTND_BIN NODE_MODULES [KUBECTL...]
//
// Each kustomization (KUSTOMIZATIONS) is built the way `kubectl apply -k`
// builds it (`kubectl kustomize`) by each KUBECTL given (default: kubectl);
// make k8s-check gives the kubectl on PATH and, when that is not Debian's,
// Debian 12's (kubernetes-client, 1.20.2, kustomize v2.0.3) as well.  Every
// one must build every kustomization, and all must yield the same objects
// (parsed, in any order; the one difference allowed is the name suffix of a
// generated ConfigMap: kustomize v2 and v5 hash it differently, both from
// its data).  Every object is validated:
// - Kubernetes kinds by kubernetes-models (npm: the API server's OpenAPI
//   schemas as validators);
// - KEDA's ScaledObject by its CRD's schema (tests/deploy/schemas/, from
//   KEDA's Go types), and the rules of KEDA's admission webhook and of its
//   prometheus trigger;
// - KServe's ServingRuntime and InferenceService by the schema below,
//   written from KServe's API types (pkg/apis/serving/v1alpha1
//   servingruntime_types.go, v1beta1 component.go, predictor.go, model.go),
//   the predictor's ComponentExtensionSpec from KServe's CRD
//   (tests/deploy/schemas/), its annotations and autoscaling by the rules of
//   KServe's webhook (pkg/constants/constants.go,
//   v1beta1/inference_service_validation.go); their containers and pod
//   fields again by kubernetes-models;
// then what attnd needs of them: the probes on /v2/health/ready and
// /v2/health/live, a grace period longer than the drain, the security
// settings, selectors that select the pods, every ATTND_* variable one attnd
// knows (its --help), the ConfigMap's attnd.json accepted by
// `attnd --check-config`, pods Prometheus scrapes at a port and path where
// attnd serves its metrics, and autoscaling on a query over metrics a running
// attnd exports (its /metrics), selecting its own pods, with no second
// autoscaler on the Deployment; and what each overlay is for (EXPECT): the
// API key only from a Secret, none committed; the Hugging Face directory on
// a read-only mount of its claim, with no weights file or hyperparameters
// beside it, accepted by `attnd --check-config` with a checkpoint directory;
// the Ingress reaching a port of the Service, its body limit no smaller than
// attnd's.  Manifests broken on purpose must be
// refused, so the validators are seen to work (K8S_CHECK_VERBOSE=1 prints
// why each was).  Running the Deployment for real (podman kube play) is part
// of make container-check, which builds the image.
import { createRequire } from "module";
import { execFileSync, spawnSync } from "child_process";
import fs from "fs";
import os from "os";
import path from "path";

const [attndBin, modulesDir, ...kubectlArgs] = process.argv.slice(2);
if (!modulesDir) {
  console.error("usage: node tests/deploy/k8s_check.mjs ATTND_BIN NODE_MODULES [KUBECTL...]");
  process.exit(2);
}
const kubectls = kubectlArgs.length ? kubectlArgs : ["kubectl"];
const require = createRequire(path.join(path.resolve(modulesDir), "noop.js"));
const YAML = require("yaml");
const Ajv = require("ajv");
const { startDaemon, stopDaemons } = createRequire(import.meta.url)("../node/daemon.js");
const ROOT = path.resolve(path.dirname(new URL(import.meta.url).pathname), "../..");
const SCHEMAS = path.join(ROOT, "tests/deploy/schemas");
const KUSTOMIZATIONS = ["deploy/kubernetes/base", "deploy/kubernetes/overlays/weights",
                        "deploy/kubernetes/overlays/keda", "deploy/kubernetes/kserve",
                        "deploy/kubernetes/overlays/kserve-keda", "deploy/kubernetes/overlays/api-key",
                        "deploy/kubernetes/overlays/model-dir", "deploy/kubernetes/overlays/ingress"];
let problems = [];
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

const ajv = new (Ajv.default || Ajv)({ strict: false, allErrors: false });
// The OpenAPI formats of the CRDs' integers.
ajv.addFormat("int32", { type: "number", validate: (x) => Number.isInteger(x) && Math.abs(x) < 2 ** 31 });
ajv.addFormat("int64", { type: "number", validate: (x) => Number.isInteger(x) });
ajv.addFormat("date-time", true);                     // status fields only

// A CRD's structural schema (tests/deploy/schemas/) as the API server applies
// it with strict field validation (kubectl's default): an object's fields
// are those it lists unless it preserves unknown fields.
function strictSchema(s) {
  if (Array.isArray(s)) return s.map(strictSchema);
  if (!s || typeof s !== "object") return s;
  const out = {};
  for (const [k, v] of Object.entries(s)) {
    if (k === "description" || k.startsWith("x-kubernetes-")) continue;
    out[k] = k === "properties" ? Object.fromEntries(Object.entries(v).map(([p, ps]) => [p, strictSchema(ps)]))
                                : strictSchema(v);
  }
  if (s.properties && s.additionalProperties === undefined && !s["x-kubernetes-preserve-unknown-fields"])
    out.additionalProperties = false;
  return out;
}

function vendored(file) {
  return JSON.parse(fs.readFileSync(path.join(SCHEMAS, file), "utf8"));
}

// KEDA: the ScaledObject's CRD schema, verbatim from KEDA's repository.
const KEDA_SO = vendored("keda.sh_scaledobjects.json");
const kedaValidator = ajv.compile(strictSchema(KEDA_SO.schema));

// KServe: the fields of its types these manifests may use; the predictor's
// ComponentExtensionSpec from KServe's CRD (tests/deploy/schemas/).
const KSERVE_EXT = vendored("kserve_componentextension.json");
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
                  properties: { name: { type: "string", pattern: "^[a-z]([-a-z0-9]*[a-z0-9])?$" },
                                annotations: strMap, labels: strMap } },
      spec: {
        type: "object", required: ["predictor"], additionalProperties: false,
        properties: {
          predictor: {
            type: "object", required: ["model"],
            properties: {
              ...strictSchema(KSERVE_EXT.schema).properties,
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
const PREDICTOR_KEYS = [...Object.keys(KSERVE_EXT.schema.properties), "model"];
const MODEL_KEYS = ["modelFormat", "runtime", "protocolVersion", "storageUri", "storage"];
const kserveValidators = Object.fromEntries(Object.entries(KSERVE).map(([k, s]) => [k, ajv.compile(s)]));

function without(obj, keys) {
  return Object.fromEntries(Object.entries(obj).filter(([k]) => !keys.includes(k)));
}

function schemaError(v) {
  const e = v.errors[0];
  return `${e.instancePath || "/"} ${e.message}${e.params && e.params.additionalProperty ? ` (${e.params.additionalProperty})` : ""}`;
}

// ---- KEDA's rules beyond the schema ----------------------------------------------
// apis/keda/v1alpha1/scaledobject_webhook.go and scaledobject_types.go
// (verifyReplicaCount: CheckReplicaCountBoundsAreValid; verifyTriggers:
// ValidateTriggers), pkg/scalers/scaler.go (GetMetricTargetType) and the
// prometheus trigger's settings, pkg/scalers/prometheus_scaler.go
// (prometheusMetadata: the keys read from a trigger's metadata, with those of
// authentication.Config read from it too).
const PROMETHEUS_TRIGGER_KEYS = {
  required: ["serverAddress", "query", "threshold"],
  optional: ["queryParameters", "activationThreshold", "namespace", "customHeaders", "ignoreNullValues",
             "unsafeSsl", "awsRegion", "timeout", "identityOwner", "authModes", "authMode", "apiKey", "method",
             "keyParamName"],
};

function kedaRules(so) {
  const s = so.spec;
  const min = s.minReplicaCount ?? 0, max = s.maxReplicaCount ?? 100;
  if (min > max) throw new Error(`MinReplicaCount=${min} must be less than MaxReplicaCount=${max}`);
  if (s.idleReplicaCount !== undefined && s.idleReplicaCount >= min)
    throw new Error(`IdleReplicaCount=${s.idleReplicaCount} must be less than MinReplicaCount=${min}`);
  const names = new Set();
  for (const t of s.triggers) {
    if (t.name && names.has(t.name)) throw new Error(`triggerName "${t.name}" is defined multiple times`);
    if (t.name) names.add(t.name);
    if (t.metricType === "Utilization" && !["cpu", "memory"].includes(t.type))
      throw new Error(`trigger ${t.type}: metricType Utilization is for cpu and memory only`);
    if (t.type !== "prometheus") continue;
    const m = t.metadata;
    for (const k of PROMETHEUS_TRIGGER_KEYS.required)
      if (!(k in m)) throw new Error(`prometheus trigger: no ${k}`);
    for (const k of Object.keys(m))
      if (!PROMETHEUS_TRIGGER_KEYS.required.includes(k) && !PROMETHEUS_TRIGGER_KEYS.optional.includes(k))
        throw new Error(`prometheus trigger: ${k} is no setting of KEDA's prometheus scaler`);
    for (const k of ["threshold", "activationThreshold"])
      if (k in m && !/^[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$/.test(m[k]))
        throw new Error(`prometheus trigger: ${k} "${m[k]}" is not a number`);
    for (const k of ["ignoreNullValues", "unsafeSsl"])
      if (k in m && !/^(true|false|t|f|1|0|TRUE|FALSE|True|False|T|F)$/.test(m[k]))
        throw new Error(`prometheus trigger: ${k} "${m[k]}" is not a boolean`);
    if (!/^https?:\/\/[^\s/]+/.test(m.serverAddress))
      throw new Error(`prometheus trigger: serverAddress "${m.serverAddress}" is not an http(s) URL`);
  }
}

// ---- KServe's rules beyond the schema -----------------------------------------------
// pkg/constants/constants.go: the annotations an InferenceService may carry
// (serving.kserve.io/...), DeploymentModeType (RawDeployment and Serverless
// are the legacy names of Standard and Knative, which
// inference_service_defaults.go rewrites before validation),
// AutoscalerAllowedClassList, the HPA's metrics; and
// pkg/apis/serving/v1beta1/inference_service_validation.go
// (validateInferenceServiceAutoscaler, validateAutoScalingCompExtension with
// validateScalingHPACompExtension / validateScalingKedaCompExtension,
// validateScaleTarget) and component.go (validateReplicas).
const KSERVE_ANNOTATIONS = ["gke-accelerator", "deploymentMode", "enable-tag-routing", "disable-localmodel",
  "autoscalerClass", "metrics", "targetUtilizationPercentage", "stop", "enable-metric-aggregation",
  "enable-prometheus-scraping", "nodegroup", "logger-secret-name", "logger-secret-path", "logger-secret-file",
  "disable-auto-update", "inferencepool-migrated", "exp-dra-device-class", "exp-dra-cel-selector",
  "exp-dra-device-count", "exp-dra-container-name", "gpu-resource-types"].map((k) => "serving.kserve.io/" + k);
const DEPLOYMENT_MODES = { Standard: "Standard", RawDeployment: "Standard", Knative: "Knative",
                           Serverless: "Knative", ModelMesh: "ModelMesh" };
const AUTOSCALER_CLASSES = ["hpa", "external", "keda", "none"];

function kserveAnnotations(where, annotations) {
  for (const k of Object.keys(annotations || {}))
    if (k.startsWith("serving.kserve.io/") && !KSERVE_ANNOTATIONS.includes(k))
      throw new Error(`${where}: ${k} is no annotation of KServe's`);
}

function scaleTarget(t) {
  if (t.type === "Utilization") {
    if (t.averageUtilization === undefined) throw new Error("the AverageUtilization type should be set");
    if (t.averageUtilization < 1 || t.averageUtilization > 100)
      throw new Error("the target utilization percentage should be a [1-100] integer");
  } else if (t.type === "AverageValue" && t.averageValue === undefined) {
    throw new Error("the AverageValue type should be set");
  } else if (t.type === "Value" && t.value === undefined) {
    throw new Error("the Value type should be set");
  }
}

function kserveRules(isvc) {
  const a = isvc.metadata.annotations || {};
  kserveAnnotations("metadata.annotations", a);
  const p = isvc.spec.predictor;
  kserveAnnotations("predictor.annotations", p.annotations);
  const modeName = a["serving.kserve.io/deploymentMode"];
  if (modeName !== undefined && !(modeName in DEPLOYMENT_MODES))
    throw new Error(`deploymentMode "${modeName}" is not one of ${Object.keys(DEPLOYMENT_MODES).join(", ")}`);
  const cls = a["serving.kserve.io/autoscalerClass"];
  if (cls !== undefined && !AUTOSCALER_CLASSES.includes(cls))
    throw new Error(`[${cls}] is not a supported autoscaler class type`);
  const min = p.minReplicas ?? 1, max = p.maxReplicas ?? 0;
  if (max !== 0 && min > max) throw new Error("'MinReplicas' cannot be greater than MaxReplicas");
  if (DEPLOYMENT_MODES[modeName] !== "Standard") return;
  const metrics = (p.autoScaling && p.autoScaling.metrics) || [];
  if (cls === "hpa") {
    const metric = p.scaleMetric || "cpu";
    if (!["cpu", "memory"].includes(metric)) throw new Error(`[${metric}] is not a supported metric`);
    if (p.scaleTarget !== undefined && metric === "cpu" && (p.scaleTarget < 1 || p.scaleTarget > 100))
      throw new Error("the target utilization percentage should be a [1-100] integer");
    for (const m of metrics)
      if (m.type !== "Resource") throw new Error(`invalid HPA metric source type with value [${m.type}]`);
  } else if (cls === "keda") {
    if (p.scaleMetric !== undefined) throw new Error("ScaleMetric is not supported for KEDA");
    for (const m of metrics) {
      const src = { Resource: m.resource, External: m.external, PodMetric: m.podmetric }[m.type];
      if (!src) throw new Error(`metricSpec.${m.type} is not set`);
      if (m.type === "Resource") {
        if (m.resource.name === "cpu" && m.resource.target.type !== "Utilization")
          throw new Error("the cpu target value type should be Utilization");
      } else {
        if (!src.metric.query) throw new Error("the query should not be empty");
        if (src.target.value === undefined) throw new Error("the target threshold value should not be empty");
      }
      scaleTarget(src.target);
    }
  }
}

// Validates one object; throws with the first error.
function validateObject(o) {
  if (typeof o !== "object" || !o || !o.apiVersion || !o.kind) throw new Error("not a Kubernetes object");
  if (o.apiVersion.startsWith("serving.kserve.io/")) {
    const v = kserveValidators[o.kind];
    if (!v) throw new Error(`no schema for ${o.apiVersion} ${o.kind}`);
    if (!v(o)) throw new Error(schemaError(v));
    k8sValidate("v1", "ObjectMeta", o.metadata);
    if (o.kind === "ServingRuntime") {
      kserveAnnotations("spec.annotations", o.spec.annotations);
      for (const c of o.spec.containers) k8sValidate("v1", "Container", c);
    } else {
      const p = o.spec.predictor;
      k8sValidate("v1", "PodSpec", { containers: [], ...without(p, PREDICTOR_KEYS) });
      k8sValidate("v1", "Container", { name: "kserve-container", ...without(p.model, MODEL_KEYS) });
      kserveRules(o);
    }
    return;
  }
  if (o.apiVersion.startsWith("keda.sh/")) {
    if (o.apiVersion !== "keda.sh/v1alpha1" || o.kind !== "ScaledObject")
      throw new Error(`no schema for ${o.apiVersion} ${o.kind}`);
    if (!kedaValidator(o)) throw new Error(schemaError(kedaValidator));
    k8sValidate("v1", "ObjectMeta", o.metadata);
    kedaRules(o);
    return;
  }
  k8sValidate(o.apiVersion, o.kind, o);
}

// ---- what attnd needs of them -----------------------------------------------------

const help = execFileSync(attndBin, ["--help"], { encoding: "utf8" });
const knownVars = new Set(help.match(/ATTND_[A-Z_]+/g));

// What a running attnd exports: {path, status, types: series name -> counter
// | gauge, families: names as its # TYPE lines give them} from GET path.
async function attndMetrics(metricsPath) {
  const list = [];
  try {
    const d = await startDaemon(attndBin, [], {}, list);
    const r = await fetch(d.base + metricsPath);
    const text = await r.text();
    // A histogram's series are its _bucket, _sum and _count (counters).
    const types = new Map(), families = [];
    for (const [, name, type] of text.matchAll(/^# TYPE (\S+) (\S+)$/gm)) {
      families.push(type === "histogram" ? `${name}_{bucket,sum,count}` : name);
      if (type === "histogram")
        for (const s of ["_bucket", "_sum", "_count"]) types.set(name + s, "counter");
      else
        types.set(name, type);
    }
    return { path: metricsPath, status: r.status, types, families };
  } finally {
    await stopDaemons(list);
  }
}

// A pod label as Prometheus' `kubernetes-pods` job writes it (labelmap of
// __meta_kubernetes_pod_label_*: characters outside [a-zA-Z0-9_] become _).
const promLabel = (k) => k.replace(/[^a-zA-Z0-9_]/g, "_");

// The series a PromQL expression reads: [{name, matchers: [[label, op, value]],
// fn: the function it is an argument of}], and its outermost function.
const AGGREGATIONS = ["sum", "min", "max", "avg", "group", "stddev", "stdvar", "count", "count_values", "bottomk",
                      "topk", "quantile", "limitk", "limit_ratio"];

function promSeries(query) {
  const series = [];
  const stack = [];
  let i = 0, outer = null, pending = null;       // pending: an aggregation before its by/without list
  while (i < query.length) {
    const rest = query.slice(i);
    let m;
    if ((m = /^\s+/.exec(rest))) {
      i += m[0].length;
    } else if ((m = /^"(?:[^"\\]|\\.)*"/.exec(rest)) || (m = /^\[[^\]]*\]/.exec(rest)) ||
               (m = /^[0-9.]+(?:[eE][-+]?\d+)?/.exec(rest))) {
      i += m[0].length;                                  // strings, ranges, numbers
    } else if ((m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\s*)/.exec(rest))) {
      i += m[0].length;
      const name = m[1];
      if (["by", "without", "on", "ignoring", "group_left", "group_right"].includes(name)) {
        series.push({ grouping: name });
        const g = /^\([^)]*\)/.exec(query.slice(i));       // its label list
        if (g) i += g[0].length;
      } else if (query[i] === "(" || AGGREGATIONS.includes(name)) {
        if (!outer && !stack.length && !series.length) outer = name;
        pending = name;
      } else if (!["offset", "bool", "and", "or", "unless"].includes(name)) {
        const s = { name, matchers: [], fn: stack.length ? stack[stack.length - 1] : null };
        const b = /^\{([^}]*)\}/.exec(query.slice(i));
        if (b) {
          i += b[0].length;
          for (const [, k, op, v] of b[1].matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)\s*(=~|!=|!~|=)\s*"((?:[^"\\]|\\.)*)"/g))
            s.matchers.push([k, op, v]);
        }
        series.push(s);
      }
    } else {
      if (rest[0] === "(") stack.push(pending || "");
      if (rest[0] === ")") stack.pop();
      if (rest[0] === "(") pending = null;
      i++;
    }
  }
  return { series, outer };
}

// The autoscaling query: one number (KEDA's prometheus scaler refuses a
// result of several elements: an aggregation with no grouping), over
// metrics attnd exports, counters through rate() and gauges not, each
// series selecting podLabels' pods (Prometheus' names for them).
function checkQuery(where, query, metrics, podLabels) {
  const { series, outer } = promSeries(query);
  const trimmed = query.trim();
  if (!["sum", "max", "avg", "min", "count"].includes(outer) || !trimmed.endsWith(")") ||
      series.some((s) => s.grouping))
    fail(where, `query ${query}: not one aggregation with no grouping (KEDA takes a one-element result)`);
  const named = series.filter((s) => s.name);
  if (!named.length) fail(where, `query ${query} reads no metric`);
  const labels = Object.fromEntries(Object.entries(podLabels || {}).map(([k, v]) => [promLabel(k), v]));
  for (const s of named) {
    const type = metrics.types.get(s.name);
    if (!type) {
      fail(where, `${s.name} is no series attnd exports (GET ${metrics.path}: ${metrics.families.join(", ")})`);
      continue;
    }
    const rated = ["rate", "irate", "increase"].includes(s.fn);
    if (type === "counter" && !rated) fail(where, `${s.name} is a counter: read it through rate()`);
    if (type !== "counter" && rated) fail(where, `${s.name} is a ${type}: rate() of it means nothing`);
    if (!s.matchers.some(([k]) => k in labels))
      fail(where, `${s.name}{...} selects no pod label (${Object.keys(labels).join(", ")}): it would sum every attnd Prometheus scrapes`);
    for (const [k, op, v] of s.matchers) {
      if (k === "namespace") continue;                  // the job's own label: the user's to set
      if (op !== "=" || labels[k] !== v)
        fail(where, `${s.name}{${k}${op}"${v}"} does not select the pods (their labels: ${JSON.stringify(labels)})`);
    }
  }
}

// Prometheus' scrape annotations: on, at a port of the container, at the
// path where attnd serves its metrics.
function checkScrape(where, annotations, ports, metrics) {
  const a = annotations || {};
  if (a["prometheus.io/scrape"] !== "true") fail(where, "prometheus.io/scrape is not \"true\": Prometheus reads no metrics");
  if (!ports.includes(Number(a["prometheus.io/port"])))
    fail(where, `prometheus.io/port ${a["prometheus.io/port"]} is no port of the container (${ports.join(", ")})`);
  if ((a["prometheus.io/path"] || "/metrics") !== metrics.path || metrics.status !== 200)
    fail(where, `prometheus.io/path ${a["prometheus.io/path"]}: attnd serves its metrics at ${metrics.path}`);
}

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

const containerPorts = (c) => (c.ports || []).map((p) => p.containerPort);

function checkKustomization(dir, objects, metrics) {
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
    checkScrape(`${where}: its pods`, pod.metadata.annotations, pod.spec.containers.flatMap(containerPorts), metrics);
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
    // One autoscaler: KEDA's webhook refuses a ScaledObject for a workload an
    // HPA already scales (scaledobject_webhook.go, verifyHpas), and two would
    // fight over the replicas.
    const scalers = [
      ...byKind("HorizontalPodAutoscaler").filter((h) => h.spec.scaleTargetRef.kind === "Deployment" &&
                                                         h.spec.scaleTargetRef.name === d.metadata.name)
        .map((h) => `HorizontalPodAutoscaler ${h.metadata.name}`),
      ...byKind("ScaledObject").filter((s) => (s.spec.scaleTargetRef.kind || "Deployment") === "Deployment" &&
                                              s.spec.scaleTargetRef.name === d.metadata.name)
        .map((s) => `ScaledObject ${s.metadata.name}`),
    ];
    if (scalers.length !== 1) fail(where, `scaled by ${scalers.length} autoscalers (${scalers.join(", ")}), not one`);
  }
  for (const h of byKind("HorizontalPodAutoscaler"))
    if (h.spec.scaleTargetRef.kind !== "Deployment" ||
        !byKind("Deployment").some((d) => d.metadata.name === h.spec.scaleTargetRef.name))
      fail(`${dir}: HorizontalPodAutoscaler ${h.metadata.name}`, "does not scale the Deployment");
  for (const so of byKind("ScaledObject")) {
    const where = `${dir}: ScaledObject ${so.metadata.name}`;
    const ref = so.spec.scaleTargetRef;
    const d = byKind("Deployment").find((x) => x.metadata.name === ref.name);
    if (!d || (ref.kind || "Deployment") !== "Deployment" || (ref.apiVersion || "apps/v1") !== "apps/v1") {
      fail(where, `scales ${ref.apiVersion || "apps/v1"} ${ref.kind || "Deployment"} ${ref.name}, not the Deployment`);
      continue;
    }
    const proms = so.spec.triggers.filter((t) => t.type === "prometheus");
    if (!proms.length) fail(where, "no prometheus trigger: it does not scale on attnd's metrics");
    if (so.spec.triggers.some((t) => ["cpu", "memory"].includes(t.type)))
      fail(where, "a CPU or memory trigger: a forward keeps its CPUs busy at any load, so CPU says nothing of the queue");
    for (const t of proms) checkQuery(where, t.metadata.query, metrics, d.spec.template.metadata.labels);
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
    const p = isvc.spec.predictor;
    const m = p.model;
    const rt = byKind("ServingRuntime").find((r) => r.metadata.name === m.runtime);
    if (!rt) fail(where, `no ServingRuntime ${m.runtime}`);
    else if (!rt.spec.supportedModelFormats.some((f) => f.name === m.modelFormat.name))
      fail(where, `runtime ${m.runtime} does not take ${m.modelFormat.name}`);
    if (m.protocolVersion !== "v2") fail(where, "not the v2 protocol");
    checkEnv(where, m.env);
    if (!(p.terminationGracePeriodSeconds > 15)) fail(where, "grace period not above the drain");
    const annotations = isvc.metadata.annotations || {};
    if (DEPLOYMENT_MODES[annotations["serving.kserve.io/deploymentMode"]] !== "Standard")
      fail(where, "not KServe's Standard mode (serving.kserve.io/deploymentMode): attnd's manifests are written for it");
    const cls = annotations["serving.kserve.io/autoscalerClass"];
    if (!["hpa", "keda"].includes(cls)) fail(where, `autoscalerClass ${cls}: not hpa or keda`);
    if (cls !== "keda" || !rt) continue;
    // The predictor's pods as KServe makes them (v1beta1 predictor.go,
    // buildObjectMeta: the runtime's, the service's and the predictor's
    // labels and annotations, and its own labels; Standard mode's
    // deployment_reconciler.go adds app; the pod mutator,
    // metrics_aggregate_injector.go, rewrites prometheus.io/port to
    // Knative's queue-proxy when enable-prometheus-scraping is "true").
    const podLabels = { ...rt.spec.labels, ...isvc.metadata.labels, ...p.labels,
                        "serving.kserve.io/inferenceservice": isvc.metadata.name, component: "predictor",
                        app: `isvc.${isvc.metadata.name}-predictor` };
    const podAnnotations = { ...rt.spec.annotations, ...annotations, ...p.annotations };
    if (podAnnotations["serving.kserve.io/enable-prometheus-scraping"] !== "false")
      fail(where, "serving.kserve.io/enable-prometheus-scraping is not \"false\": KServe's webhook may point Prometheus at Knative's port 9091");
    checkScrape(`${where}: its pods`, podAnnotations, rt.spec.containers.flatMap(containerPorts), metrics);
    const ext = ((p.autoScaling && p.autoScaling.metrics) || []).filter((x) => x.type === "External");
    if (!ext.length) fail(where, "no External metric: KEDA would not scale on attnd's metrics");
    if (((p.autoScaling && p.autoScaling.metrics) || []).some((x) => x.type === "Resource"))
      fail(where, "a Resource (CPU or memory) metric: a forward keeps its CPUs busy at any load");
    for (const x of ext) {
      if (x.external.metric.backend !== "prometheus") fail(where, `backend ${x.external.metric.backend}, not prometheus`);
      checkQuery(where, x.external.metric.query, metrics, podLabels);
    }
  }
}

// ---- what each overlay is for ---------------------------------------------------
// Checked on the objects the overlay builds (EXPECT[dir](dir, objects)),
// beyond what every kustomization must be.

const attndContainers = (objects) => objects.filter((o) => o.kind === "Deployment")
  .flatMap((d) => d.spec.template.spec.containers.map((c) => ({ d, c })));

// overlays/api-key: the key from a Secret the overlay does not carry (none
// is committed), never as a literal value.
function expectApiKey(dir, objects) {
  if (objects.some((o) => o.kind === "Secret")) fail(dir, "a Secret is built: the key must not be in the repository");
  for (const { c } of attndContainers(objects)) {
    const e = (c.env || []).find((x) => x.name === "ATTND_API_KEY");
    const ref = e && e.valueFrom && e.valueFrom.secretKeyRef;
    if (!ref || !ref.name || !ref.key || "value" in e)
      fail(dir, `container ${c.name}: ATTND_API_KEY is not taken from a Secret (secretKeyRef)`);
  }
}

// overlays/model-dir: ATTND_MODEL_DIR at a read-only mount of the claim the
// overlay makes, no weights file or hyperparameter beside it (config.json
// gives them), and attnd accepts the pod's settings with a checkpoint
// directory in its place (tests/fixtures/hf/bert_mlm).
function expectModelDir(dir, objects) {
  const claims = objects.filter((o) => o.kind === "PersistentVolumeClaim").map((o) => o.metadata.name);
  const cm = objects.find((o) => o.kind === "ConfigMap");
  for (const { d, c } of attndContainers(objects)) {
    const env = c.env || [];
    const md = env.find((x) => x.name === "ATTND_MODEL_DIR");
    if (!md || !md.value) { fail(dir, `container ${c.name}: no ATTND_MODEL_DIR`); continue; }
    const mount = (c.volumeMounts || []).find((m) => md.value === m.mountPath || md.value.startsWith(m.mountPath + "/"));
    const vol = mount && d.spec.template.spec.volumes.find((v) => v.name === mount.name);
    if (!mount || !mount.readOnly || !vol || !vol.persistentVolumeClaim || !claims.includes(vol.persistentVolumeClaim.claimName))
      fail(dir, `container ${c.name}: ATTND_MODEL_DIR ${md.value} is not on a read-only mount of the overlay's claim`);
    for (const x of env)
      if (x.name === "ATTND_WEIGHTS" || /^ATTND_(D_MODEL|N_HEADS|N_KV_HEADS|D_FF|N_LAYERS|ACTIVATION)$/.test(x.name))
        fail(dir, `container ${c.name}: ${x.name} beside ATTND_MODEL_DIR (config.json gives the model)`);
    const literal = Object.fromEntries(env.filter((x) => x.name.startsWith("ATTND_") && "value" in x)
                                          .map((x) => [x.name, x.value]));
    const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "attnd-k8s-"));
    const file = path.join(tmp, "attnd.json");
    fs.writeFileSync(file, cm ? cm.data["attnd.json"] : "{}");
    const r = spawnSync(attndBin, ["--check-config"], { encoding: "utf8", env: { ...process.env, ...literal,
      ATTND_CONFIG: file, ATTND_MODEL_DIR: path.join(ROOT, "tests/fixtures/hf/bert_mlm") } });
    if (r.status !== 0) fail(dir, `container ${c.name}: attnd --check-config with a checkpoint directory: ${r.stderr.trim()}`);
    fs.rmSync(tmp, { recursive: true, force: true });
  }
}

// overlays/ingress: every backend a port of a Service of the build, and a
// body limit (ingress-nginx's proxy-body-size) no smaller than attnd's.
function expectIngress(dir, objects) {
  const ings = objects.filter((o) => o.kind === "Ingress");
  if (!ings.length) fail(dir, "no Ingress");
  const cm = objects.find((o) => o.kind === "ConfigMap");
  const maxBody = (cm && JSON.parse(cm.data["attnd.json"]).server.max_body_bytes) || 67108864;
  for (const ing of ings) {
    const where = `${dir}: Ingress ${ing.metadata.name}`;
    const backends = (ing.spec.rules || []).flatMap((r) => ((r.http && r.http.paths) || []).map((p) => p.backend));
    if (ing.spec.defaultBackend) backends.push(ing.spec.defaultBackend);
    if (!backends.length) fail(where, "no backend");
    for (const b of backends) {
      const svc = objects.find((o) => o.kind === "Service" && b.service && o.metadata.name === b.service.name);
      const port = b.service && b.service.port;
      if (!svc || !svc.spec.ports.some((p) => (port.name && p.name === port.name) || (port.number && p.port === port.number)))
        fail(where, `backend ${JSON.stringify(b)} is no port of a Service here`);
    }
    const size = /^(\d+)([kmg]?)$/i.exec((ing.metadata.annotations || {})["nginx.ingress.kubernetes.io/proxy-body-size"] || "");
    const bytes = size && Number(size[1]) * ({ "": 1, k: 1024, m: 1024 ** 2, g: 1024 ** 3 })[size[2].toLowerCase()];
    if (!size || (bytes !== 0 && bytes < maxBody))
      fail(where, `proxy-body-size ${size ? size[0] : "unset (1m)"} is below attnd's max_body_bytes (${maxBody}): the ingress would refuse what attnd takes`);
  }
}

const EXPECT = {
  "deploy/kubernetes/overlays/api-key": expectApiKey,
  "deploy/kubernetes/overlays/model-dir": expectModelDir,
  "deploy/kubernetes/overlays/ingress": expectIngress,
};

// ---- rendering ------------------------------------------------------------------

// kubectl's version as kubectl itself says it, with its kustomize's.
function kubectlVersion(kc) {
  try {
    const v = JSON.parse(execFileSync(kc, ["version", "--client", "-o", "json"], { encoding: "utf8" }));
    return `${kc}: kubectl ${v.clientVersion.gitVersion}, kustomize ` +
      (v.kustomizeVersion || "(not reported; kubectl before 1.21 builds in kustomize v2.0.3)");
  } catch (e) {
    return `${kc}: cannot run: ${e.message.split("\n")[0]}`;
  }
}

// Stable text of a value: object keys sorted, so that parsed objects compare
// whatever order kustomize wrote their fields in.
function canonical(v) {
  if (Array.isArray(v)) return `[${v.map(canonical).join(",")}]`;
  if (v && typeof v === "object")
    return `{${Object.keys(v).sort().map((k) => `${JSON.stringify(k)}:${canonical(v[k])}`).join(",")}}`;
  return JSON.stringify(v);
}

function replaceStrings(v, from, to) {
  if (Array.isArray(v)) return v.map((x) => replaceStrings(x, from, to));
  if (v && typeof v === "object")
    return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, replaceStrings(x, from, to)]));
  return v === from ? to : v;
}

// The one difference allowed between two kubectls' objects: a generated
// ConfigMap's name suffix (kustomize v2.0.3 hashes its kind, name and data;
// v5 the same with the name left empty; both change with the data alone).
// other's name is replaced by ref's, everywhere it is a whole string value,
// where both have a ConfigMap "<name>-<10 characters>" of the same name and
// the same data.  Returns other, normalised, and what was replaced.
function normaliseGenerated(ref, other) {
  const notes = [];
  const gen = /^(.+)-[a-z0-9]{10}$/;
  for (const a of ref.filter((o) => o.kind === "ConfigMap" && gen.test(o.metadata.name))) {
    const stem = gen.exec(a.metadata.name)[1];
    const b = other.find((o) => o.kind === "ConfigMap" && gen.test(o.metadata.name) &&
                                gen.exec(o.metadata.name)[1] === stem && o.metadata.name !== a.metadata.name &&
                                canonical(o.data) === canonical(a.data));
    if (!b) continue;
    notes.push(`ConfigMap ${stem}: suffix ${a.metadata.name.slice(stem.length + 1)} / ${b.metadata.name.slice(stem.length + 1)}`);
    other = replaceStrings(other, b.metadata.name, a.metadata.name);
  }
  return { other, notes };
}

function sameObjects(where, names, ref, other) {
  const key = (o) => `${o.apiVersion} ${o.kind} ${o.metadata && o.metadata.name}`;
  const { other: norm, notes } = normaliseGenerated(ref, other);
  const a = new Map(ref.map((o) => [key(o), canonical(o)]));
  const b = new Map(norm.map((o) => [key(o), canonical(o)]));
  let same = a.size === ref.length && b.size === norm.length;
  for (const k of new Set([...a.keys(), ...b.keys()]))
    if (a.get(k) !== b.get(k)) {
      same = false;
      fail(where, `${k}: ${!a.has(k) ? `only ${names[1]} makes it` : !b.has(k) ? `only ${names[0]} makes it`
                                                                 : `${names[0]} and ${names[1]} make it differently`}`);
    }
  return { same, notes };
}

// Builds dir with kubectl kc: {objects} or {error}; the warnings kubectl
// printed are collected in warned (kubectl 1.21+ calls commonLabels, bases
// and patchesStrategicMerge deprecated: kept, since 1.20 reads no other).
function kustomize(kc, dir, warned) {
  const r = spawnSync(kc, ["kustomize", path.join(ROOT, dir)], { encoding: "utf8", maxBuffer: 1 << 26 });
  for (const line of (r.stderr || "").split("\n").filter(Boolean)) {
    const w = /^# Warning: '(\w+)' is deprecated/.exec(line);
    if (w) warned.add(w[1]);
    else if (r.status === 0) console.log(`${kc} kustomize ${dir}: ${line}`);
  }
  if (r.status !== 0 || r.error) return { error: (r.stderr || "").trim() || String(r.error) };
  return { objects: YAML.parseAllDocuments(r.stdout).map((d) => d.toJS()).filter(Boolean) };
}

// ---- main ---------------------------------------------------------------------------

const metrics = await attndMetrics("/metrics").catch((e) => {
  fail("attnd", `GET /metrics: ${e.message}`);
  return { path: "/metrics", status: 0, types: new Map(), families: [] };
});
if (metrics.status !== 200 || !metrics.types.size) fail("attnd", `GET /metrics: ${metrics.status}, no metrics`);

// dir's objects as the first kubectl builds them, for the self-checks; none
// when it cannot (the run below reports that).
function selfBuild(dir) {
  const r = spawnSync(kubectls[0], ["kustomize", path.join(ROOT, dir)], { encoding: "utf8", maxBuffer: 1 << 26 });
  return r.status === 0 ? YAML.parseAllDocuments(r.stdout).map((d) => d.toJS()).filter(Boolean) : [];
}

// The validators refuse what they should (or this check proves nothing).
const so = (spec) => ({ apiVersion: "keda.sh/v1alpha1", kind: "ScaledObject", metadata: { name: "x" },
                        spec: { scaleTargetRef: { name: "attnd" }, ...spec } });
const prom = (metadata) => so({ triggers: [{ type: "prometheus",
  metadata: { serverAddress: "http://p", query: "sum(x)", threshold: "2", ...metadata } }] });
const isvc = (annotations, predictor) => ({ apiVersion: "serving.kserve.io/v1beta1", kind: "InferenceService",
  metadata: { name: "x", annotations: { "serving.kserve.io/deploymentMode": "Standard", ...annotations } },
  spec: { predictor: { model: { modelFormat: { name: "attnd" } }, ...predictor } } });
const external = (metric, target) => ({ autoScaling: { metrics: [{ type: "External", external: {
  metric: { backend: "prometheus", query: "sum(x)", ...metric }, target: { type: "Value", value: "2", ...target } } }] } });
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
  ["a ScaledObject with no triggers", so({ triggers: [] })],
  ["a ScaledObject trigger with no type", so({ triggers: [{ metadata: {} }] })],
  ["a ScaledObject with a field misspelt", so({ minReplicas: 2, triggers: [{ type: "cpu", metadata: {} }] })],
  ["a ScaledObject's replicas as a string", so({ maxReplicaCount: "ten", triggers: [{ type: "cpu", metadata: {} }] })],
  ["a ScaledObject with min above max", so({ minReplicaCount: 5, maxReplicaCount: 2, triggers: [{ type: "cpu", metadata: {} }] })],
  ["a prometheus trigger with no threshold", prom({ threshold: undefined })],
  ["a prometheus trigger's setting misspelt", prom({ treshold: "2" })],
  ["a prometheus trigger's threshold not a number", prom({ threshold: "two" })],
  ["an unknown deploymentMode", isvc({ "serving.kserve.io/deploymentMode": "Raw" }, {})],
  ["an unknown autoscalerClass", isvc({ "serving.kserve.io/autoscalerClass": "kpa" }, {})],
  ["a KServe annotation misspelt", isvc({ "serving.kserve.io/autoScalerClass": "keda" }, {})],
  ["scaleMetric with KEDA", isvc({ "serving.kserve.io/autoscalerClass": "keda" }, { scaleMetric: "cpu" })],
  ["an External metric with the hpa class", isvc({ "serving.kserve.io/autoscalerClass": "hpa" }, external({}, {}))],
  ["an External metric with no target value", isvc({ "serving.kserve.io/autoscalerClass": "keda" },
     external({}, { value: undefined }))],
  ["an External metric of an unknown backend", isvc({ "serving.kserve.io/autoscalerClass": "keda" },
     external({ backend: "influxdb" }, {}))],
  ["an autoScaling field misspelt", isvc({ "serving.kserve.io/autoscalerClass": "keda" },
     { autoScaling: { metrics: [{ type: "External", external: { metric: { backend: "prometheus", querry: "x" },
                                                                target: { type: "Value", value: "2" } } }] } })],
]) {
  let refused = false;
  try {
    validateObject(JSON.parse(JSON.stringify(bad)));
  } catch (e) {
    refused = true;
    if (process.env.K8S_CHECK_VERBOSE) console.log(`self-check: ${what}: refused: ${e.message}`);
  }
  if (!refused) fail("self-check", `${what} was not refused`);
}

// And what attnd needs is seen to be checked: the KEDA overlays' objects
// (built by the first kubectl), each broken in one way.
{
  const keda = selfBuild("deploy/kubernetes/overlays/keda");
  const kserve = selfBuild("deploy/kubernetes/overlays/kserve-keda");
  const hpa = YAML.parse(fs.readFileSync(path.join(ROOT, "deploy/kubernetes/base/hpa.yaml"), "utf8"));
  const each = (kind, f) => (objs) => objs.filter((o) => o.kind === kind).forEach(f);
  const query = (q) => each("ScaledObject", (o) => { o.spec.triggers[0].metadata.query = q; });
  const external = (f) => each("InferenceService", (o) => f(o.spec.predictor.autoScaling.metrics[0].external));
  for (const [what, good, breakIt] of [
    ["an HPA left beside the ScaledObject", keda, (objs) => objs.push(hpa)],
    ["a ScaledObject that scales another Deployment", keda,
     each("ScaledObject", (o) => { o.spec.scaleTargetRef.name = "attnd-other"; })],
    ["a ScaledObject on CPU", keda,
     each("ScaledObject", (o) => o.spec.triggers.push({ type: "cpu", metricType: "Utilization",
                                                        metadata: { value: "70" } }))],
    ["a query of a metric attnd does not export", keda,
     query('sum(rate(attnd_queue_wait_seconds_sum{app_kubernetes_io_name="attnd"}[1m]))')],
    ["a query of rate() over a gauge", keda, query('sum(rate(attnd_queue_depth{app_kubernetes_io_name="attnd"}[1m]))')],
    ["a query of a counter without rate()", keda,
     query('sum(attnd_queue_duration_seconds_sum{app_kubernetes_io_name="attnd"})')],
    ["a query by pod (several elements)", keda, query('sum by (pod) (attnd_queue_depth{app_kubernetes_io_name="attnd"})')],
    ["a query selecting no pod label", keda, query("sum(attnd_queue_depth)")],
    ["a query selecting other pods", keda, query('sum(attnd_queue_depth{app_kubernetes_io_name="other"})')],
    ["pods Prometheus does not scrape", keda,
     each("Deployment", (o) => { delete o.spec.template.metadata.annotations["prometheus.io/scrape"]; })],
    ["a scrape port attnd does not listen on", keda,
     each("Deployment", (o) => { o.spec.template.metadata.annotations["prometheus.io/port"] = "9090"; })],
    ["a KServe query selecting the Deployment's label, which KServe's pods lack", kserve,
     external((x) => { x.metric.query = 'sum(rate(attnd_queue_duration_seconds_sum{app_kubernetes_io_name="attnd"}[1m]))'; })],
    ["a KServe query of a metric attnd does not export", kserve,
     external((x) => { x.metric.query = x.metric.query.replace("attnd_queue_duration", "attnd_queue_time"); })],
    ["KServe's prometheus switch on (port 9091)", kserve, each("ServingRuntime", (o) => {
      o.spec.annotations["serving.kserve.io/enable-prometheus-scraping"] = "true";
    })],
    ["KServe's pods not scraped at attnd's port", kserve, each("ServingRuntime", (o) => {
      o.spec.annotations["prometheus.io/port"] = "9091";
    })],
  ]) {
    if (!good.length) continue;                      // not built: the run below says why
    const objs = JSON.parse(JSON.stringify(good));
    breakIt(objs);
    const kept = problems;
    problems = [];
    checkKustomization("self-check", objs, metrics);
    const found = problems.length;
    if (process.env.K8S_CHECK_VERBOSE) console.log(`self-check: ${what}: refused: ${problems.join("; ")}`);
    problems = kept;
    if (!found) fail("self-check", `${what} was not refused`);
  }
}

// And each overlay's expectations are seen to be checked: its objects, each
// broken in one way.
{
  const env = (name, f) => (objs) => attndContainers(objs).forEach(({ c }) => f(c.env.find((e) => e.name === name), c));
  for (const [what, dir, breakIt] of [
    ["an API key as a literal value", "deploy/kubernetes/overlays/api-key",
     env("ATTND_API_KEY", (e) => { delete e.valueFrom; e.value = "change-me"; })],
    ["an API key Secret in the build", "deploy/kubernetes/overlays/api-key",
     (objs) => objs.push({ apiVersion: "v1", kind: "Secret", metadata: { name: "attnd-api-key" },
                           stringData: { "api-key": "change-me" } })],
    ["a model directory on no mount", "deploy/kubernetes/overlays/model-dir",
     env("ATTND_MODEL_DIR", (e) => { e.value = "/elsewhere"; })],
    ["a weights file beside the model directory", "deploy/kubernetes/overlays/model-dir",
     env("ATTND_MODEL_DIR", (e, c) => c.env.push({ name: "ATTND_WEIGHTS", value: "/models/model.safetensors" }))],
    ["a setting attnd refuses with the model directory", "deploy/kubernetes/overlays/model-dir",
     env("ATTND_MODEL_DIR", (e, c) => c.env.push({ name: "ATTND_DTYPE", value: "float16" }))],
    ["an Ingress to another Service", "deploy/kubernetes/overlays/ingress",
     (objs) => objs.filter((o) => o.kind === "Ingress").forEach((o) => { o.spec.rules[0].http.paths[0].backend.service.name = "other"; })],
    ["an Ingress refusing attnd's largest bodies", "deploy/kubernetes/overlays/ingress",
     (objs) => objs.filter((o) => o.kind === "Ingress").forEach((o) => {
       o.metadata.annotations["nginx.ingress.kubernetes.io/proxy-body-size"] = "1m"; })],
  ]) {
    const good = selfBuild(dir);
    if (!good.length) continue;                      // not built: the run below says why
    const objs = JSON.parse(JSON.stringify(good));
    breakIt(objs);
    const kept = problems;
    problems = [];
    EXPECT[dir]("self-check", objs);
    const found = problems.length;
    if (process.env.K8S_CHECK_VERBOSE) console.log(`self-check: ${what}: refused: ${problems.join("; ")}`);
    problems = kept;
    if (!found) fail("self-check", `${what} was not refused`);
  }
}

// And the comparison of two kubectls' objects: a generated ConfigMap's other
// suffix is the same objects; one field more, or one object less, is not.
const ref = selfBuild("deploy/kubernetes/base");
if (ref.length) {
  const name = ref.find((o) => o.kind === "ConfigMap").metadata.name;
  const other = replaceStrings(JSON.parse(JSON.stringify(ref)).reverse(), name, name.replace(/.{10}$/, "abcdefghij"));
  const kept = problems;
  for (const [what, objs, same] of [
    ["another suffix of the generated ConfigMap, in another order", other, true],
    ["a Deployment with one field more", other.map((o) => o.kind === "Deployment" ? { ...o, spec: { ...o.spec, paused: true } } : o), false],
    ["a Service less", other.filter((o) => o.kind !== "Service"), false],
    ["a ConfigMap of other data", other.map((o) => o.kind === "ConfigMap" ? { ...o, data: { "attnd.json": "{}" } } : o), false],
  ]) {
    problems = [];
    const r = sameObjects("self-check", ["a", "b"], ref, objs);
    if (process.env.K8S_CHECK_VERBOSE) console.log(`self-check: ${what}: same ${r.same} ${problems.join("; ")}`);
    problems = kept;
    if (r.same !== same) fail("self-check", `${what}: compared as ${r.same ? "the same" : "different"}`);
  }
}

console.log("k8s check: kustomize by");
for (const kc of kubectls) console.log(`  ${kubectlVersion(kc)}`);
const warned = new Map(kubectls.map((kc) => [kc, new Set()]));
for (const dir of KUSTOMIZATIONS) {
  const built = kubectls.map((kc) => ({ kc, ...kustomize(kc, dir, warned.get(kc)) }));
  for (const b of built) if (b.error) fail(dir, `${b.kc} kustomize: ${b.error}`);
  const ok = built.filter((b) => !b.error);
  if (!ok.length) continue;
  const objects = ok[0].objects;
  const notes = [];
  for (const b of ok.slice(1)) {
    const r = sameObjects(dir, [ok[0].kc, b.kc], objects, b.objects);
    if (r.same) notes.push(`same objects from ${b.kc}${r.notes.length ? ` (${r.notes.join("; ")})` : ""}`);
  }
  for (const o of objects) {
    try {
      validateObject(o);
      validated++;
    } catch (e) {
      fail(`${dir}: ${o.kind} ${o.metadata && o.metadata.name}`, e.message);
    }
  }
  checkKustomization(dir, objects, metrics);
  if (EXPECT[dir]) EXPECT[dir](dir, objects);
  console.log(`${dir}: ${objects.map((o) => o.kind).join(", ")}`);
  for (const n of notes) console.log(`  ${n}`);
}
for (const [kc, w] of warned)
  if (w.size) console.log(`${kc} calls ${[...w].join(", ")} deprecated: kept, since kubectl 1.20 reads no other`);
for (const p of problems) console.log("FAILED " + p);
console.log(`k8s check: ${validated} objects validated, ${KUSTOMIZATIONS.length} kustomizations built by ` +
            `${kubectls.length} kubectl${kubectls.length > 1 ? "s" : ""}, ${problems.length} problems`);
process.exit(problems.length ? 1 : 0);
