// Package framework holds what this provider adds to pulumi-go-provider
// (infer) v1.5.0 where the framework falls short, so that the next person
// can check each against a newer release in one place and delete what the
// framework then does itself. Every workaround's mechanism is here; the
// specifics (which config keys, which component inputs, which resource's
// outputs) come from the package that owns them, as values of this
// package's types, because config, cluster and talos import this package
// and it cannot import them back. provider.New collects them into a
// Workarounds and applies them all in one pass (Apply), in this order:
//
//   - Config diff (ConfigDiff; the keys and their equality from
//     config.Diff). infer replaces the provider on any config change
//     (infer/configuration.go diffConfig, pulumi/pulumi-go-provider#409),
//     and a replaced provider replaces every resource it manages. Here a
//     rotated token or an equivalent endpoint is no change, anything else
//     an update.
//   - Schema fixes, applied in one decode/encode of the schema
//     (WithSchemaFixes). PlainInputs (the component's from
//     cluster.PlainInputs): infer marks only top-level scalar inputs
//     `plain` (infer/schema.go serializeTypeAsPropertyType: arrays, maps
//     and object references never get Plain), so the SDKs would accept
//     Outputs inside the component's lists and objects, which cannot be
//     planned.
//     DescribeEnums: infer registers an enum type from its values only
//     (infer/types.go, the enum case of crawlTypes), so the type's own
//     description is lost.
//     OutputsOnly (talos.PreviewOutputs): infer lists every Args field as
//     an input, but a value the preview shows next to a change must be
//     among the checked inputs (Pulumi's display takes a detailed diff's
//     new values from them, pulumi/pkg engine/detailedDiff.go), so
//     ConfigurationApply's configView and configChange (and the one-line
//     summaries of ClusterHealth and ControlPlaneComponents) are Args
//     fields the schema lists as outputs only.
//   - Construct guards (ConstructGuard; TalosCluster's from
//     cluster.ConstructGuard): infer hands a component the zero value of an
//     input that is not known yet, which would plan silently without it,
//     and its SDK refuses a secret in a plain Go field. A guard unwraps or
//     stands in for the inputs that may be secret or unknown and refuses
//     the others by name. Every construct the engine stopped ends quietly
//     (quietShutdown, pulumi/pulumi#19976).
//   - Preview unknowns the inputs do not explain (PreviewUnknowns;
//     MachineSecrets' from talos.RenewalPreview): infer computes a
//     preview's unknown outputs only from changed inputs
//     (WireDependencies), and a due certificate renewal changes none.
//   - Inputs the state does not keep (InputsOnly; talos.StateCopies): infer
//     derives a resource's outputs from a State type that embeds its Args,
//     so every input is copied into the state, and infer's typed Diff,
//     Update and Delete requests carry the state only (infer/resource.go
//     DiffRequest, UpdateRequest, DeleteRequest), never the old inputs the
//     engine sends. The copies are put back from those inputs before the
//     resource sees a state and taken out of what it returns, and out of
//     the schema's outputs.
//   - Request data infer's typed requests drop (infer.CreateRequest and the
//     others carry the resource's name only; infer keeps the URN for its
//     logger under an internal key): the URN of every resource request
//     (WithURN, read with URN: a Delete's advice, a VM's create identity),
//     whether Check saw old inputs and the ID a Diff saw (WithRequestFacts:
//     CheckedFresh, DiffedID), and the provider resource's ID from
//     Configure (WithProviderInstance, around the gRPC server:
//     ProviderInstance).
//   - Annotations once per process (Annotate): infer runs a type's Annotate
//     again in every Check (defaults) and in every Diff of a resource with an
//     Update (GetSchema), each Describe walking the struct's fields
//     (infer/schema.go getAnnotated, internal/introspect fieldMatcher); the
//     Annotate methods of our types record on the first call and replay.
//   - No schema in a custom Diff (Resource, in place of infer.Resource for a
//     resource with a Diff of its own): infer builds the resource's whole
//     schema in every Diff of a resource with an Update and never uses it
//     when the resource diffs itself (infer/resource.go
//     derivedResourceController.Diff); Diff requests go to a controller of
//     the same resource without an Update, which skips it. And a Diff whose
//     state and inputs are plain values is decoded here (DecodePlain, held
//     to infer's decoding by package decodetest) rather than by infer's
//     reflection-heavy ende/mapper pair. Its Check encodes what the
//     resource's Check returns itself (EncodeChecked, held to infer's
//     result by decodetest.CheckEncode) instead of letting infer decode the
//     inputs a second time for their secrets and unknowns.
//   - Less decoding per resource (issue 14): gRPC's proto codec is
//     replaced by leanCodec (lean.go), which cuts from the engine's answers
//     to a component's registrations the outputs the component does not
//     read of its children (KeepOutputs) before they are decoded: the Go
//     SDK decodes every one (pulumi sdk go/pulumi/context.go resolve).
//     TestLeanCodecAssumptions fails when the SDK or a child type starts
//     reading what is cut.
//
// Not a workaround, and so not here: config.WithOfflineGuard, the offline
// preview mode (a feature of this provider).
//
// No longer needed, and deleted: a wrapper that turned Pulumi's
// customTimeouts into context deadlines. infer wraps every provider in its
// cancel middleware (infer/provider.go Wrap -> middleware/cancel), which
// gives Create, Update and Delete a context with req.Timeout as deadline;
// TestCustomTimeoutsBecomeDeadlines keeps that true across upgrades.
package framework
