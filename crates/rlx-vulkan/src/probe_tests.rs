use crate::probe::*;
use crate::VulkanError;

pub(crate) fn adapter(index: usize, adapter_type: AdapterType, api: [u32; 3]) -> AdapterInfo {
    AdapterInfo {
        index,
        name: format!("dev{index}"),
        vendor_id: 0,
        device_id: 0,
        adapter_type,
        driver_name: "drv".into(),
        driver_info: String::new(),
        driver_version: 0,
        pipeline_cache_uuid: [0; 16],
        api_version: api,
        limits: AdapterLimits {
            max_storage_buffer_range: 1 << 27,
            min_storage_buffer_offset_alignment: 16,
            max_memory_allocation_size: 1 << 30,
            max_compute_shared_memory_size: 32768,
            max_compute_work_group_invocations: 1024,
            max_compute_work_group_size: [1024, 1024, 64],
            max_compute_work_group_count: [65535; 3],
            max_push_constants_size: 128,
            max_bound_descriptor_sets: 8,
            max_per_stage_storage_buffers: 64,
        },
        features: AdapterFeatures {
            subgroup_size: 32,
            subgroup_arithmetic: true,
            subgroup_shuffle: true,
            shader_f16: false,
            storage_buffer_16bit: false,
            cooperative_matrix: false,
        },
        memory_heaps: vec![MemoryHeap { size: 1 << 30, device_local: true }],
        has_compute_queue: true,
    }
}

#[test]
fn discrete_is_preferred_over_everything() {
    let list = [
        adapter(0, AdapterType::Cpu, [1, 3, 0]),
        adapter(1, AdapterType::Integrated, [1, 3, 0]),
        adapter(2, AdapterType::Discrete, [1, 3, 0]),
    ];
    assert_eq!(pick_with(&list, None).unwrap().index, 2);
    assert_eq!(pick_with(&list[..2], None).unwrap().index, 1);
    assert_eq!(pick_with(&list[..1], None).unwrap().index, 0);
}

#[test]
fn unusable_devices_are_skipped() {
    let mut no_queue = adapter(1, AdapterType::Discrete, [1, 3, 0]);
    no_queue.has_compute_queue = false;
    let list =
        [adapter(0, AdapterType::Cpu, [1, 3, 0]), no_queue, adapter(2, AdapterType::Discrete, [1, 0, 0])];
    assert_eq!(pick_with(&list, None).unwrap().index, 0);
    let e = pick_with(&list[1..], None).unwrap_err();
    assert!(matches!(e, VulkanError::NoSuitableDevice { .. }));
    assert!(e.to_string().contains("1: dev1") && e.to_string().contains("2: dev2"), "{e}");
}

#[test]
fn override_picks_by_index_and_bad_values_list_devices() {
    let list = [adapter(0, AdapterType::Discrete, [1, 3, 0]), adapter(1, AdapterType::Cpu, [1, 2, 0])];
    assert_eq!(pick_with(&list, Some("1")).unwrap().index, 1);
    assert_eq!(pick_with(&list, Some(" 0 ")).unwrap().index, 0);
    assert_eq!(pick_with(&list, Some("")).unwrap().index, 0);
    for bad in ["2", "gpu", "-1"] {
        let e = pick_with(&list, Some(bad)).unwrap_err();
        let text = e.to_string();
        assert!(matches!(e, VulkanError::BadDeviceIndex { .. }), "{text}");
        assert!(text.contains(&format!("RLX_VULKAN_DEVICE={bad}")), "{text}");
        assert!(
            text.contains("0: dev0 [Discrete, drv, Vulkan 1.3.0]; 1: dev1 [Cpu, drv, Vulkan 1.2.0]"),
            "{text}"
        );
    }
}

#[test]
fn empty_list_is_no_device() {
    assert_eq!(pick_with(&[], None).unwrap_err(), VulkanError::NoDevice);
}

#[test]
fn unified_memory_types() {
    assert!(AdapterType::Cpu.is_unified_memory());
    assert!(AdapterType::Integrated.is_unified_memory());
    assert!(!AdapterType::Discrete.is_unified_memory());
    assert!(!AdapterType::Virtual.is_unified_memory());
}
