package harness

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/pulumi/pulumi/sdk/v3/go/auto"
	"github.com/pulumi/pulumi/sdk/v3/go/common/tokens"
	"github.com/pulumi/pulumi/sdk/v3/go/common/workspace"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
)

// InlineStack creates (or selects) stack "test" of project for an inline Go program through
// the Automation API, with the project's CLI, this environment's variables and the
// provider found by plugins.providers[].path. With lab non-nil the provider config for the
// lab is set on the stack (apiToken as a secret), and the lab's provider environment
// variables (Lab.VMWatchScale) on the workspace.
func InlineStack(t testing.TB, env *Env, project string, program pulumi.RunFunc, lab *Lab) auto.Stack {
	t.Helper()
	return inlineStack(t, env, project, program, lab, &workspace.Plugins{Providers: []workspace.PluginOptions{
		{Name: "proxmoxtalos", Path: env.ProviderDir},
	}})
}

// InlineStackInstalled is InlineStack without plugins.providers: the engine finds the
// provider plugin as it does for a user, installed or downloaded.
func InlineStackInstalled(t testing.TB, env *Env, project string, program pulumi.RunFunc, lab *Lab) auto.Stack {
	t.Helper()
	return inlineStack(t, env, project, program, lab, nil)
}

func inlineStack(t testing.TB, env *Env, project string, program pulumi.RunFunc, lab *Lab, plugins *workspace.Plugins) auto.Stack {
	t.Helper()
	ctx := context.Background()
	cli, err := auto.NewPulumiCommand(&auto.PulumiCommandOptions{
		Root:             filepath.Dir(env.ToolsBin), // the command is <Root>/bin/pulumi
		SkipVersionCheck: true,
	})
	if err != nil {
		t.Fatalf("using the Pulumi CLI in %s: %v", env.ToolsBin, err)
	}
	settings := workspace.Project{
		Name:    tokens.PackageName(project),
		Runtime: workspace.NewProjectRuntimeInfo("go", nil),
		Plugins: plugins,
	}
	vars := env.Vars()
	vars["PATH"] = env.ToolsBin + ":" + getenv("PATH")
	if lab != nil {
		for k, v := range lab.vars() {
			vars[k] = v
		}
	}
	stack, err := auto.UpsertStackInlineSource(ctx, "test", project, program,
		auto.Pulumi(cli),
		auto.Project(settings),
		auto.PulumiHome(env.Home),
		auto.WorkDir(t.TempDir()),
		auto.EnvVars(vars),
		auto.SecretsProvider("passphrase"),
	)
	if err != nil {
		t.Fatalf("creating inline stack %s/test: %v", project, err)
	}
	if lab != nil {
		cfg := auto.ConfigMap{
			"proxmoxtalos:endpoint": {Value: lab.Endpoint},
			"proxmoxtalos:apiToken": {Value: lab.APIToken, Secret: true},
		}
		if lab.CACert != "" {
			cfg["proxmoxtalos:caCert"] = auto.ConfigValue{Value: lab.CACert}
		}
		if err := stack.SetAllConfig(ctx, cfg); err != nil {
			t.Fatalf("setting the lab config on %s/test: %v", project, err)
		}
	}
	return stack
}
