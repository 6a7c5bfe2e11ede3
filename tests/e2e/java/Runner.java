package proxmoxtalos.e2e;

import java.lang.reflect.Method;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.function.Consumer;

import com.google.gson.Gson;
import com.google.gson.JsonElement;
import com.google.gson.JsonObject;
import com.google.gson.JsonSyntaxException;
import com.pulumi.Context;
import com.pulumi.automation.AutomationException;
import com.pulumi.automation.ConfigValue;
import com.pulumi.automation.DestroyOptions;
import com.pulumi.automation.HistoryOptions;
import com.pulumi.automation.LocalPulumiCommand;
import com.pulumi.automation.LocalPulumiCommandOptions;
import com.pulumi.automation.LocalWorkspace;
import com.pulumi.automation.LocalWorkspaceOptions;
import com.pulumi.automation.OperationType;
import com.pulumi.automation.PreviewOptions;
import com.pulumi.automation.ProjectPluginOptions;
import com.pulumi.automation.ProjectPlugins;
import com.pulumi.automation.ProjectRuntimeName;
import com.pulumi.automation.ProjectSettings;
import com.pulumi.automation.UpOptions;
import com.pulumi.automation.UpdateKind;
import com.pulumi.automation.UpdateState;
import com.pulumi.automation.UpdateSummary;
import com.pulumi.automation.WorkspaceStack;

/**
 * Runs one step (up, preview or destroy) of an inline Pulumi program through the Java
 * Automation API, the way tests/e2e drives the Java example: the program is a public static
 * method taking a Context, the CLI comes first on PATH and the provider from the path the Go
 * test gives, and the result goes to a JSON file (never to the console, because stack
 * outputs hold secrets in plain text there).
 *
 * Usage: java proxmoxtalos.e2e.Runner spec.json
 */
public final class Runner {
    public static void main(String[] args) throws Exception {
        JsonObject spec = new Gson().fromJson(Files.readString(Path.of(args[0]), StandardCharsets.UTF_8), JsonObject.class);
        Method method = Class.forName(spec.get("programClass").getAsString())
            .getMethod(spec.get("programMethod").getAsString(), Context.class);
        Consumer<Context> program = ctx -> {
            try {
                method.invoke(null, ctx);
            } catch (ReflectiveOperationException e) {
                throw new RuntimeException(e.getCause() != null ? e.getCause() : e);
            }
        };

        Map<String, String> env = new HashMap<>();
        spec.getAsJsonObject("envVars").entrySet().forEach(e -> env.put(e.getKey(), e.getValue().getAsString()));
        String project = spec.get("projectName").getAsString();
        var options = LocalWorkspaceOptions.builder()
            .workDir(Path.of(spec.get("workDir").getAsString()))
            .pulumiHome(Path.of(spec.get("pulumiHome").getAsString()))
            .pulumiCommand(LocalPulumiCommand.create(LocalPulumiCommandOptions.builder().skipVersionCheck(true).build()))
            .environmentVariables(env)
            .secretsProvider("passphrase")
            .projectSettings(ProjectSettings.builder(project, ProjectRuntimeName.JAVA)
                .plugins(ProjectPlugins.builder().providers(List.of(ProjectPluginOptions.builder()
                    .name("proxmoxtalos")
                    .path(spec.get("providerDir").getAsString())
                    .build())).build())
                .build())
            .build();

        WorkspaceStack stack = LocalWorkspace.createOrSelectStack(project, spec.get("stackName").getAsString(), program, options);
        try {
            Map<String, ConfigValue> config = new HashMap<>();
            for (Map.Entry<String, JsonElement> e : spec.getAsJsonObject("config").entrySet()) {
                JsonObject v = e.getValue().getAsJsonObject();
                config.put(e.getKey(), new ConfigValue(v.get("value").getAsString(), v.get("secret").getAsBoolean()));
            }
            stack.setAllConfig(config);

            // Engine output (which masks secrets) goes to stderr for the test log.
            Consumer<String> log = System.err::println;
            Map<String, Object> result = new HashMap<>();
            String step = spec.get("step").getAsString();
            result.put("step", step);
            switch (step) {
                case "up": {
                    result.put("resourceChanges", counts(up(stack, log).resourceChanges()));
                    result.put("outputs", stackOutputs(spec, env));
                    break;
                }
                case "preview":
                    result.put("changeSummary", counts(stack.preview(PreviewOptions.builder().onStandardOutput(log).build()).changeSummary()));
                    break;
                case "destroy":
                    result.put("resourceChanges", counts(stack.destroy(DestroyOptions.builder().onStandardOutput(log).build()).summary().resourceChanges()));
                    break;
                default:
                    throw new IllegalArgumentException("unknown step " + step + ": use up, preview or destroy");
            }
            Files.writeString(Path.of(spec.get("resultFile").getAsString()), new Gson().toJson(result), StandardCharsets.UTF_8);
        } finally {
            stack.close();
        }
        System.exit(0); // the inline program's language server keeps non-daemon threads
    }

    /**
     * Runs up and returns its summary. pulumi-java 1.16's WorkspaceStack.up reads the stack
     * outputs after a successful update through LocalWorkspace.getStackOutputs, which parses
     * them as Map<String, String> and throws on a list output (the example's nodes). That
     * failure, and only that one, is taken from the update's own record in the stack history.
     */
    private static UpdateSummary up(WorkspaceStack stack, Consumer<String> log) throws Exception {
        try {
            return stack.up(UpOptions.builder().onStandardOutput(log).build()).summary();
        } catch (AutomationException e) {
            if (!(e.getCause() instanceof JsonSyntaxException)) {
                throw e;
            }
            UpdateSummary last = stack.getHistory(HistoryOptions.builder().pageSize(1).page(1).build()).get(0);
            if (last.kind() != UpdateKind.UPDATE || last.result() != UpdateState.SUCCEEDED) {
                throw new IllegalStateException("up failed: last update " + last.kind() + " " + last.result(), e);
            }
            return last;
        }
    }

    /**
     * The stack's outputs as {"value", "secret"} pairs, read with the CLI. pulumi-java 1.16's
     * own UpResult.outputs() parses `pulumi stack output --json` as Map<String, String>
     * (LocalWorkspace.getStackOutputs), so a list output such as the example's nodes fails there.
     */
    private static Map<String, Object> stackOutputs(JsonObject spec, Map<String, String> env) throws Exception {
        Map<String, Object> plain = cliJson(spec, env, "--show-secrets");
        Map<String, Object> masked = cliJson(spec, env); // secrets read "[secret]"
        Map<String, Object> outputs = new HashMap<>();
        for (Map.Entry<String, Object> o : plain.entrySet()) {
            boolean secret = "[secret]".equals(masked.get(o.getKey())) && !"[secret]".equals(o.getValue());
            Map<String, Object> v = new HashMap<>();
            v.put("value", o.getValue());
            v.put("secret", secret);
            outputs.put(o.getKey(), v);
        }
        return outputs;
    }

    @SuppressWarnings("unchecked")
    private static Map<String, Object> cliJson(JsonObject spec, Map<String, String> env, String... extra) throws Exception {
        List<String> cmd = new java.util.ArrayList<>(List.of("pulumi", "stack", "output", "--json", "--non-interactive",
            "--stack", spec.get("stackName").getAsString()));
        cmd.addAll(List.of(extra));
        ProcessBuilder pb = new ProcessBuilder(cmd).directory(Path.of(spec.get("workDir").getAsString()).toFile());
        pb.environment().putAll(env);
        pb.environment().put("PULUMI_HOME", spec.get("pulumiHome").getAsString());
        pb.redirectError(ProcessBuilder.Redirect.INHERIT);
        Process p = pb.start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        if (p.waitFor() != 0) {
            throw new IllegalStateException("pulumi stack output --json failed with exit code " + p.exitValue());
        }
        return new Gson().fromJson(out, Map.class);
    }

    private static Map<String, Integer> counts(Map<OperationType, Integer> m) {
        Map<String, Integer> out = new HashMap<>();
        if (m != null) {
            m.forEach((k, v) -> out.put(k.toString().toLowerCase(Locale.ROOT), v));
        }
        return out;
    }
}
