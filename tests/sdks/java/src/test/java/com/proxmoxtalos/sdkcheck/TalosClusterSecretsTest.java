package com.proxmoxtalos.sdkcheck;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.proxmoxtalos.proxmoxtalos.TalosCluster;
import com.proxmoxtalos.proxmoxtalos.TalosClusterArgs;
import com.proxmoxtalos.proxmoxtalos.inputs.HostArgs;
import com.proxmoxtalos.proxmoxtalos.inputs.NetworkArgs;
import com.pulumi.core.Output;
import com.pulumi.core.internal.Internal;
import com.pulumi.test.Mocks;
import com.pulumi.test.PulumiTest;
import java.util.HashMap;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;

/**
 * The TalosCluster component's secret outputs are secret in a Java program even when the
 * engine hands them back in plaintext: ComponentResourceOptions has no additionalSecretOutputs,
 * so gen/javagen makes their getters return them as secret (gen/javagen/components.go).
 */
class TalosClusterSecretsTest {
    private static final Map<String, Object> STATE = Map.of(
            "kubeconfig", "apiVersion: v1\nkind: Config\n",
            "talosconfig", "context: lab\n",
            "machineSecrets", "cluster:\n  id: x\n",
            "endpoint", "https://10.0.0.5:6443");

    /** Answers every registration with STATE in plaintext, as no real engine would for this component. */
    static final class PlainMocks implements Mocks {
        final AtomicReference<String> clusterName = new AtomicReference<>();

        @Override
        public CompletableFuture<ResourceResult> newResourceAsync(ResourceArgs args) {
            var state = new HashMap<String, Object>(args.inputs);
            if (args.type.equals("proxmoxtalos:index:TalosCluster")) {
                clusterName.set((String) args.inputs.get("clusterName"));
                state.putAll(STATE);
            }
            return CompletableFuture.completedFuture(ResourceResult.of(Optional.of(args.name + "-id"), state));
        }
    }

    @AfterAll
    static void cleanup() {
        PulumiTest.cleanup();
    }

    @Test
    void secretOutputsAreSecretAndPlainOnesAreNot() {
        var mocks = new PlainMocks();
        var cluster = new AtomicReference<TalosCluster>();
        PulumiTest.withMocks(mocks).runTest(ctx -> cluster.set(new TalosCluster("lab", TalosClusterArgs.builder()
                .clusterName("lab")
                .hosts(HostArgs.builder().node("pve1").build())
                .network(NetworkArgs.builder().subnet("10.0.0.0/24").build())
                .build()))).throwOnError();
        assertEquals("lab", mocks.clusterName.get(), "the component was not registered with its inputs");

        var c = cluster.get();
        assertSecret("kubeconfig", c.kubeconfig());
        assertSecret("talosconfig", c.talosconfig());
        assertSecret("machineSecrets", c.machineSecrets());
        // The mock's plaintext stays plaintext where the schema says nothing: the secrecy above
        // comes from the SDK, not from the mock.
        assertFalse(Internal.of(c.endpoint()).isSecret().join(), "endpoint is not a secret output");
        assertEquals(STATE.get("endpoint"), PulumiTest.extractValue(c.endpoint()));
    }

    private static void assertSecret(String name, Output<String> out) {
        assertTrue(Internal.of(out).isSecret().join(), name + " is not secret in the Java SDK");
        assertEquals(STATE.get(name), PulumiTest.extractValue(out), name + " lost its value");
    }
}
