export const mediaTarget = { name: 'media', async runCase() { return { desc: ['todo'], problems: [] }; } };
