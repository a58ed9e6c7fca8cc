//! The registry's tests. A device left out of the build says which feature brings it (any
//! features); the probes of every backend agree with the registry (default features).

use super::*;

#[test]
fn a_device_left_out_names_its_feature() {
    let built = [
        (Device::Cpu, "cpu", cfg!(feature = "cpu")),
        (Device::Gpu, "wgpu", cfg!(feature = "wgpu")),
        (Device::Vulkan, "vulkan", cfg!(feature = "vulkan")),
    ];
    for (device, feature, on) in built {
        let s = status(device);
        let reason = s.reason.clone().unwrap_or_default();
        let named = reason.contains(&format!("the `{feature}` feature"));
        if on {
            assert!(!named, "{device} is built in, yet: {reason}");
        } else {
            assert!(!s.available && named, "{device} is not built in: {s:?}");
            let e = open(device).err().map(|e| e.to_string()).unwrap_or_default();
            assert!(e.contains(&format!("the `{feature}` feature")), "{e}");
        }
    }
}

// The tests below read the probes of every backend: they need the default features.
#[cfg(all(feature = "cpu", feature = "wgpu", feature = "vulkan"))]
mod probes {
    use super::super::*;
    use crate::rank::GraphStats;

    #[test]
    fn cpu_model_parsing() {
        let x86 =
            "processor\t: 0\nvendor_id\t: GenuineIntel\nmodel\t\t: 85\nmodel name\t: Intel(R) Xeon(R) Gold\n";
        assert_eq!(parse_cpu_model(x86).as_deref(), Some("Intel(R) Xeon(R) Gold"));
        let arm = "processor\t: 0\nBogoMIPS\t: 48.00\n\nModel\t\t: Raspberry Pi 4 Model B\n";
        assert_eq!(parse_cpu_model(arm).as_deref(), Some("Raspberry Pi 4 Model B"));
        assert_eq!(parse_cpu_model("processor : 0\n"), None);
    }

    /// What this machine's wgpu says: `Some(is software)` when an adapter opens.
    fn wgpu_here() -> Option<bool> {
        WgpuBackend::new().ok().map(|b| b.info().is_software())
    }

    /// What this machine's Vulkan probe says: (usable adapter chosen, auto would take it).
    fn vulkan_here() -> (bool, bool) {
        match rlx_vulkan::probe() {
            Ok(all) => match rlx_vulkan::pick(&all) {
                Ok(a) => (true, auto_takes(a.adapter_type)),
                Err(_) => (false, false),
            },
            Err(_) => (false, false),
        }
    }

    #[test]
    fn registry_lists_each_backend_once() {
        let all = devices();
        let names: Vec<Device> = all.iter().map(|s| s.device).collect();
        assert_eq!(names, vec![Device::Cpu, Device::Gpu, Device::Vulkan]);
        let cpu = all.iter().find(|s| s.device == Device::Cpu).unwrap();
        assert!(cpu.available && cpu.reason.is_none());
        let keys: Vec<&str> = cpu.details.iter().map(|(k, _)| k.as_str()).collect();
        for k in ["model", "logical threads", "max tensor bytes", "buffer alignment", "native ops"] {
            assert!(keys.contains(&k), "missing {k} in {keys:?}");
        }
        assert!(cpu.key.as_ref().is_some_and(|k| k.backend == "cpu") && !cpu.software);

        // wgpu: available exactly when an adapter opens here (lavapipe counts), with its facts.
        let gpu = all.iter().find(|s| s.device == Device::Gpu).unwrap();
        assert_eq!(gpu.available, wgpu_here().is_some(), "{gpu:?}");
        if let Some(software) = wgpu_here() {
            assert_eq!(gpu.software, software);
            let keys: Vec<&str> = gpu.details.iter().map(|(k, _)| k.as_str()).collect();
            for k in ["adapter", "backend", "type", "driver", "features", "max binding", "max tensor bytes"] {
                assert!(keys.contains(&k), "missing {k} in {keys:?}");
            }
            assert!(gpu.key.as_ref().is_some_and(|k| k.backend == "wgpu" && !k.adapter.is_empty()));
        } else {
            assert!(!gpu.reason.as_deref().unwrap_or("").is_empty(), "{gpu:?}");
        }

        let vulkan = all.iter().find(|s| s.device == Device::Vulkan).unwrap();
        assert_eq!(vulkan.available, vulkan_here().0, "{vulkan:?}");
        if vulkan.available {
            let keys: Vec<&str> = vulkan.details.iter().map(|(k, _)| k.as_str()).collect();
            for k in [
                "adapter",
                "type",
                "driver",
                "Vulkan API",
                "maxStorageBufferRange",
                "shared memory",
                "subgroup size",
                "max workgroup invocations",
                "cooperative matrix",
                "shader f16",
                "max tensor bytes",
            ] {
                assert!(keys.contains(&k), "missing {k} in {keys:?}");
            }
        } else {
            assert!(!vulkan.reason.as_deref().unwrap_or("").is_empty(), "{vulkan:?}");
        }
    }

    #[test]
    fn auto_takes_only_real_gpus() {
        assert!(auto_takes(AdapterType::Discrete));
        assert!(auto_takes(AdapterType::Integrated));
        assert!(!auto_takes(AdapterType::Cpu));
    }

    #[test]
    fn auto_prefers_env_then_best() {
        let (vulkan, real_vulkan) = vulkan_here();
        let real_gpu = real_vulkan || wgpu_here() == Some(false);
        let stats = GraphStats::representative();
        // As `Session::new(Auto)` with RLX_DEVICE set to `env`, without touching the environment.
        let resolve = |env: Option<&str>| {
            Device::from_env_value(env, Device::Auto)
                .and_then(|d| crate::Session::resolve(d, &stats))
                .map(|s| (s.device(), s.backend_name()))
        };
        let best = resolve(None).unwrap().0;
        if real_gpu {
            // A real GPU beats the CPU on a BERT layer by a wide margin.
            assert_ne!(best, Device::Cpu);
        } else {
            assert_eq!(best, Device::Cpu);
        }
        assert_eq!(resolve(Some("")).unwrap().0, best);
        assert_eq!(resolve(Some("auto")).unwrap().0, best);
        assert_eq!(resolve(Some("CPU")).unwrap().0, Device::Cpu);
        match resolve(Some("vulkan")) {
            Ok((d, b)) => {
                assert!(vulkan);
                assert_eq!((d, b), (Device::Vulkan, "vulkan"));
            }
            Err(e) => {
                assert!(!vulkan);
                assert!(matches!(e, Error::DeviceUnavailable { device: Device::Vulkan, .. }), "{e}");
            }
        }
        // An explicit gpu takes even a software adapter.
        match resolve(Some("gpu")) {
            Ok((d, b)) => {
                assert!(wgpu_here().is_some());
                assert_eq!((d, b), (Device::Gpu, "wgpu"));
            }
            Err(e) => {
                assert!(wgpu_here().is_none());
                assert!(matches!(e, Error::DeviceUnavailable { device: Device::Gpu, .. }), "{e}");
            }
        }
        let e = resolve(Some("tpu")).err().unwrap();
        assert!(matches!(e, Error::InvalidEnv { .. }), "{e}");
        assert!(e.to_string().contains("RLX_DEVICE='tpu'"), "{e}");
    }

    #[test]
    fn the_registry_opens_concrete_devices_only() {
        let e = open(Device::Auto).err().unwrap();
        assert!(matches!(e, Error::DeviceUnavailable { device: Device::Auto, .. }), "{e}");
        assert!(e.to_string().contains("Session::new"), "{e}");
    }

    #[test]
    fn byte_counts_read_well() {
        assert_eq!(bytes(512), "512 bytes");
        assert_eq!(bytes(32 << 10), "32.0 KiB (32768 bytes)");
        assert_eq!(bytes(128 << 20), "128.0 MiB (134217728 bytes)");
    }
}
